"""The compiled kernel (setup.py builds ``arena/_kernel.py`` with mypyc) and its stale-build guard.

A compiled kernel must make exactly the deals and moves of the Python source, must never stand in
for sources edited since it was built, and a build without a C compiler must still succeed with
the Python source. These tests build their own copy of the package in a temporary directory with
the real setup.py (mypyc and the C compiler: about 20 s), so they prove the guard whatever build
the suite's own environment has, and probe it from fresh interpreters.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FILES = (
    "__init__.py",
    "_compiled.py",
    "_kernel.py",
    "cards.py",
    "engine.py",
    "errors.py",
    "rules.py",
)
PURE = "HEARTS_ARENA_PURE_ENGINE"
BUILD_SECONDS = 600

# Deals and random playouts under rules that reach every branch of the kernel: the opening lead,
# the first-trick ban led in any suit, the queen lead, a kitty, odd table sizes, free hearts.
PROBE = """
import json, random, sys
import arena, arena._kernel as kernel
from arena.engine import COMPILED, Hand
from arena.rules import Rules
assert arena.__file__.startswith(sys.argv[1]), arena.__file__
rules = [
    Rules(),
    Rules(players=3, kitty=True),
    Rules(players=6),
    Rules(first_lead="left-of-dealer"),
    Rules(first_lead="any-club", lead_hearts_with_queen=True),
    Rules(must_break_hearts=False, penalty_on_first_trick=True, players=5),
]
hands = []
for r in rules:
    for seed in range(30):
        hand = Hand.deal(r, seed, hand_number=seed % 4)
        dealt = [hand.dealt(s) for s in range(r.players)]
        hand.playout(random.Random(seed))
        hands.append([
            [" ".join(map(str, d)) for d in dealt],
            [" ".join(map(str, t.cards)) for t in hand.tricks],
            list(hand.result().points),
        ])
print(json.dumps({
    "compiled": COMPILED,
    "kernel_compiled": kernel.COMPILED,
    "build": kernel.BUILD,
    "python_functions": type(kernel.play_tricks).__name__ == "function",
    "edited": getattr(kernel, "EDITED", False),
    "hands": hands,
}))
"""


def make_tree(tmp_path: Path) -> Path:
    """A copy of what setup.py needs: itself, pyproject.toml and the engine's modules."""
    tree = tmp_path / "tree"
    (tree / "arena").mkdir(parents=True)
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, tree / name)
    for name in PACKAGE_FILES:
        shutil.copy2(ROOT / "arena" / name, tree / "arena" / name)
    return tree


def build(tree: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run setup.py's extension step in place, as an editable install does."""
    environ = {k: v for k, v in os.environ.items() if k != PURE} | env
    return subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tree,
        env=environ,
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
        check=False,
    )


def probe(tree: Path, **env: str) -> dict[str, Any]:
    """Import the copy in a fresh interpreter and play its hands (see PROBE)."""
    environ = {k: v for k, v in os.environ.items() if k != PURE} | env
    environ["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tree)],
        cwd=tree,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def compiled_files(tree: Path) -> list[Path]:
    return sorted((tree / "arena").glob(f"_kernel*{sysconfig.get_config_var('EXT_SUFFIX')}"))


def can_compile() -> bool:
    """Whether this machine has what a C extension needs: a compiler and Python's headers."""
    # setuptools compiles with $CC when it is set, else with the compiler Python was built with.
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return shutil.which(compiler) is not None and headers.exists()


def require_compiler(what: str = "engine kernel") -> None:
    """Skip (fail under CI=true) saying what to install, where no C extension can be built
    (``what``: the compiled module the test is about)."""
    if can_compile():
        return
    reason = (
        f"the compiled {what} needs a C compiler and the Python headers: install gcc and "
        "the Python development headers (Debian: apt-get install gcc python3-dev)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the compiled {what} must be tested)")
    pytest.skip(reason)


@pytest.mark.slow
def test_a_compiled_kernel_plays_like_the_source_and_never_outlives_an_edit(
    tmp_path: Path,
) -> None:
    require_compiler()
    tree = make_tree(tmp_path)
    done = build(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert compiled_files(tree), done.stdout + done.stderr

    compiled = probe(tree)
    assert compiled["compiled"] and compiled["kernel_compiled"], compiled["build"]
    assert compiled["build"] == "compiled with mypyc"
    assert not compiled["python_functions"]

    pure = probe(tree, **{PURE: "1"})
    assert not pure["compiled"] and pure["python_functions"]
    assert pure["build"] == f"Python source ({PURE}=1)"
    assert pure["hands"] == compiled["hands"]

    kernel = tree / "arena" / "_kernel.py"
    original = kernel.read_text()
    kernel.write_text(original + "\nEDITED = True\n")
    edited = probe(tree)
    assert not edited["compiled"] and edited["python_functions"] and edited["edited"]
    assert "sources changed since the build" in edited["build"]
    assert edited["hands"] == compiled["hands"]
    kernel.write_text(original)

    cards = tree / "arena" / "cards.py"  # compiled in too: an edit there counts as well
    original_cards = cards.read_text()
    cards.write_text(original_cards + "\n# edited\n")
    assert not probe(tree)["compiled"]
    cards.write_text(original_cards)

    assert probe(tree)["compiled"]  # the sources match the build again

    # An editable reinstall: the build is current, so nothing is compiled again.
    stamps = [path.stat().st_mtime_ns for path in compiled_files(tree)]
    again = build(tree)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "matches its sources: reusing it" in again.stdout
    assert [path.stat().st_mtime_ns for path in compiled_files(tree)] == stamps
    assert probe(tree)["compiled"]


@pytest.mark.slow
def test_without_a_c_compiler_the_build_succeeds_with_the_python_source(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    done = build(tree, CC=str(tmp_path / "no-such-compiler"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "could not compile the kernel" in done.stdout, done.stdout + done.stderr
    assert compiled_files(tree) == []
    result = probe(tree)
    assert not result["compiled"] and result["python_functions"]
    assert result["build"] == "Python source (no compiled build installed)"
    assert len(result["hands"]) == 180


def test_the_setup_script_and_the_kernel_agree_on_what_a_build_is_made_of() -> None:
    # The digest setup.py writes into a build and the one the build checks on import must be
    # computed over the same files in the same way, or every build would count as stale: the
    # kernel's, and the referee's compiled modules' (arena._compiled).
    from arena import _compiled, _kernel

    # Everything in setup.py above its call to setup(): the constants and helpers, not a build
    # (in a child process: it imports setuptools).
    script = f"""
import json, pathlib
source = pathlib.Path({str(ROOT / "setup.py")!r}).read_text()
namespace = {{"__file__": {str(ROOT / "setup.py")!r}}}
exec(compile(source[: source.index("\\nsetup(")], "setup.py", "exec"), namespace)
print(json.dumps([
    list(namespace["KERNEL_SOURCES"]),
    namespace["PURE_ENGINE_VARIABLE"],
    namespace["DIGEST_LINE"],
    namespace["sources_digest"](pathlib.Path({str(ROOT / "arena")!r})),
    list(namespace["REFEREE_MODULES"]),
    namespace["sources_digest"](
        pathlib.Path({str(ROOT / "arena")!r}), namespace["REFEREE_MODULES"]
    ),
]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    sources, variable, digest_line, digest, referee, referee_digest = json.loads(done.stdout)
    assert tuple(sources) == _kernel.KERNEL_SOURCES
    assert variable == _kernel.PURE_ENGINE_VARIABLE == _compiled.PURE_VARIABLE
    assert (ROOT / "arena" / "_kernel.py").read_text().count(digest_line) == 1
    assert digest == _kernel.sources_digest(str(ROOT / "arena"))
    assert tuple(referee) == _compiled.REFEREE_MODULES
    for name in referee:
        assert (ROOT / "arena" / name).read_text().count(digest_line) == 1
    assert referee_digest == _compiled.sources_digest(str(ROOT / "arena"))
