"""HEARTS_ARENA_PURE_ENGINE, read by every compiled module's guard when the package is imported:
1 runs the Python source; a value that is neither 1 nor 0 is warned about (it would otherwise
run the compiled build without a word)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from arena import _compiled
from arena._kernel import BUILD

PROBE = "import arena._kernel as k, arena.referee.game as g; print(k.BUILD); print(g.BUILD)"


def _import_with(value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, _compiled.PURE_VARIABLE: value}
    return subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60
    )


needs_build = pytest.mark.skipif(
    BUILD == _compiled.NOT_BUILT, reason="no compiled build installed: the switch has no effect"
)


@needs_build
def test_a_value_other_than_1_or_0_is_warned_about_once() -> None:
    done = _import_with("yes")
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, done.stderr
    assert f"{_compiled.PURE_VARIABLE}=yes is not 1 or 0" in warned[0]
    assert "set it to 1 to run the Python source" in warned[0]


@needs_build
@pytest.mark.parametrize("value", ["1", "0", ""])
def test_1_and_0_are_taken_without_a_word(value: str) -> None:
    done = _import_with(value)
    assert done.returncode == 0 and "Warning" not in done.stderr, done.stderr
    builds = done.stdout.splitlines()
    if value == "1":
        assert all(b == f"Python source ({_compiled.PURE_VARIABLE}=1)" for b in builds), builds
    else:
        assert all(b.startswith("compiled") or "sources changed" in b for b in builds), builds
