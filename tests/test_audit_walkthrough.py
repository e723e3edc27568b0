"""Defects a newcomer found by following README.md in a fresh clone, checked on the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena import _compiled
from arena._kernel import BUILD as KERNEL_BUILD

ARENA = str(Path(sys.executable).parent / "arena")


# README, "The compiled kernel": "The `arena` command refuses any other value (`yes`, `true`) in
# one line". Run as a process, the package's import-time RuntimeWarning (two lines: the warning
# and the source line of arena/__init__.py) came before the command's own refusal, and
# `arena --version` (an eager option, read before the check) printed the warning and exit 0. The
# in-process CliRunner test in test_arena_cli.py cannot see either: the package is imported
# already there.
@pytest.mark.parametrize(
    "args", [("ratings", "--db", "none.db"), ("--version",)], ids=["ratings", "version"]
)
@pytest.mark.parametrize("value", ["yes", "true"])
def test_the_arena_command_refuses_an_undocumented_engine_switch_in_one_line(
    tmp_path: Path, value: str, args: tuple[str, ...]
) -> None:
    env = {**os.environ, _compiled.PURE_VARIABLE: value}
    done = subprocess.run(
        [ARENA, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == (
        f"arena: error: {_compiled.PURE_VARIABLE}={value}: set it to 1 to run the Python source "
        "of the engine and referee, or to 0 (or unset it) for the compiled build\n"
    )


def test_a_program_importing_the_package_is_still_warned(tmp_path: Path) -> None:
    """Only the arena command, which refuses the value itself, goes without the warning. (The
    package loads the engine with its first name asked for, not as it is imported.)"""
    env = {**os.environ, _compiled.PURE_VARIABLE: "yes"}
    program = tmp_path / "mine.py"
    program.write_text("import sys\nfrom arena import Game\n")
    done = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # Only a compiled build reads the variable (the Python source runs either way).
    warned = "RuntimeWarning: HEARTS_ARENA_PURE_ENGINE=yes is not 1 or 0" in done.stderr
    assert warned == (KERNEL_BUILD != _compiled.NOT_BUILT), done.stderr
    if warned:
        # At the program's own import, not in importlib/__init__.py.
        assert done.stderr.startswith(f"{program}:2: RuntimeWarning: "), done.stderr
