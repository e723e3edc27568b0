"""The referee's event loop runner tunes the garbage collector once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from arena.referee.loop import YOUNG_THRESHOLD, run


def test_run_freezes_the_start_up_heap_once_and_raises_the_young_threshold() -> None:
    # In a fresh interpreter: freezing is process-wide and done once, so the test's own
    # process would show nothing new.
    script = textwrap.dedent(
        """
        import gc
        from arena.referee.loop import run

        async def main():
            return gc.get_freeze_count(), gc.get_threshold()

        before = gc.get_freeze_count(), gc.get_threshold()
        first = run(main())
        kept = [[] for _ in range(100)]  # tracked objects made after the first run
        second = run(main())
        print(before[0], before[1][0], first[0], first[1][0], second[0] - first[0])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    frozen_before, young_before, frozen, young, frozen_again = map(int, done.stdout.split())
    assert frozen_before == 0 and young_before == 700  # CPython's defaults
    assert frozen > 1000  # the modules, classes and descriptors imported at start-up
    assert young == YOUNG_THRESHOLD
    # The second referee of the process freezes nothing more (frozen objects may still die).
    assert frozen_again <= 0


def test_run_takes_a_coroutine_and_says_so_of_a_function() -> None:
    # The README wrote run(main): uvloop's TypeError then named no fix.
    async def main() -> int:
        return 42

    assert run(main()) == 42
    with pytest.raises(TypeError, match=r"^run\(\) takes a coroutine, such as main\(\), not "):
        run(main)  # type: ignore[arg-type]
