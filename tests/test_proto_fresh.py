"""The committed protocol code is exactly what scripts/gen_protos.py makes from proto/.

The generator runs as a real process, as a developer or CI would run it. The last two tests run
it on a copy of the relevant files, to show that --check notices a stale or leftover file and
that regenerating repairs the tree byte for byte.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import run_script

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = Path("scripts") / "gen_protos.py"
GENERATED = Path("arena") / "proto"
A_GENERATED_MODULE = GENERATED / "hearts" / "v1" / "game_pb2.py"


def _copy_of_checkout(tmp_path: Path) -> Path:
    """The generator's inputs and outputs, copied: what it needs to run anywhere."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / GENERATOR, root / GENERATOR)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(ROOT / "proto", root / "proto")
    shutil.copytree(
        ROOT / GENERATED, root / GENERATED, ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / GENERATED).rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_committed_code_is_fresh() -> None:
    done = run_script(ROOT, GENERATOR, "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_names_a_stale_and_a_leftover_file(tmp_path: Path) -> None:
    root = _copy_of_checkout(tmp_path)
    stale = root / A_GENERATED_MODULE
    stale.write_bytes(stale.read_bytes() + b"# edited by hand\n")
    leftover = root / GENERATED / "hearts" / "v1" / "removed_pb2.py"
    leftover.write_text("# generated from a .proto that no longer exists\n")

    done = run_script(root, GENERATOR, "--check")

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"stale: {A_GENERATED_MODULE.as_posix()}" in done.stderr
    assert "removed_pb2.py" in done.stderr
    assert "edited by hand" in done.stderr  # the diff shows what differs


def test_regenerating_repairs_the_tree_byte_for_byte(tmp_path: Path) -> None:
    root = _copy_of_checkout(tmp_path)
    committed = _tree(root)
    shutil.rmtree(root / GENERATED)

    first = run_script(root, GENERATOR)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _tree(root) == committed
    second = run_script(root, GENERATOR)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "0 changed" in second.stdout
    assert run_script(root, GENERATOR, "--check").returncode == 0
