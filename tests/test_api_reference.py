"""The README's Python API reference is exactly what scripts/api_reference.py makes of the sources.

The script runs as a real process, as a developer or CI would run it: on this checkout, where
the reference must be fresh, and on a copy of the README whose reference is out of date, where
``--check`` must say so and a plain run must repair it.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

from conftest import run_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path("scripts") / "api_reference.py"


def _script() -> ModuleType:
    """The script as a module (for its list of the public modules)."""
    spec = importlib.util.spec_from_file_location("api_reference", ROOT / SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def _block(readme: str) -> str:
    return readme.split("<!-- api-reference: start", 1)[1].split("<!-- api-reference: end", 1)[0]


def test_the_readme_reference_is_fresh() -> None:
    done = run_script(ROOT, SCRIPT, "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_public_name_is_in_its_modules_section() -> None:
    readme = (ROOT / "README.md").read_text()
    block = _block(readme)
    sections = dict(re.findall(r"### `([a-z_.]+)`\n(.*?)(?=\n### |\Z)", block, re.S))
    public = _script().MODULES
    imported = set(re.findall(r"from (arena[a-z_.]*) import", readme))
    assert imported and imported <= set(public), "the README's examples import from these"
    assert list(sections) == list(public)
    for module in public:
        for name in importlib.import_module(module).__all__:
            assert f"`{name}" in sections[module], f"{module}.{name} is not in the README"


def test_a_stale_reference_is_reported_and_a_run_repairs_it(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / SCRIPT, root / SCRIPT)
    (root / "arena").symlink_to(ROOT / "arena")
    fresh = (ROOT / "README.md").read_text()
    stale = fresh.replace("- `mask_of(cards)`: ", "- `mask_of(cards, old)`: ", 1)
    assert stale != fresh
    (root / "README.md").write_text(stale)

    checked = run_script(root, SCRIPT, "--check")
    assert checked.returncode == 1
    assert "+- `mask_of(cards)`: " in checked.stdout
    assert "the README's API reference is stale: run python scripts/api_reference.py" in (
        checked.stdout
    )
    assert (root / "README.md").read_text() == stale  # --check writes nothing

    assert run_script(root, SCRIPT).returncode == 0
    assert (root / "README.md").read_text() == fresh
