"""The README's example of the rules engine as a library, run as a doctest so it cannot rot.

The example is read from the README section "The rules engine as a library" itself.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import arena.engine

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## The rules engine as a library"


def readme_example() -> str:
    """The first ```pycon block of the README's engine section, as written there."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    start = section.index("```pycon\n") + len("```pycon\n")
    return section[start : section.index("```", start)]


def test_the_readme_example_runs_as_shown() -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(readme_example(), {}, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted > 10


def test_the_engine_module_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(arena.engine)
    assert failed == 0 and attempted > 0
