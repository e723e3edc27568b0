"""The benchmark scripts other than bench_protocol.py (tested in its own file, with
:func:`bench`) run end to end with tiny settings and print their figure beside its anchor, as
the README's table says they do: a script that rots is found here, not by the next person who
needs a figure. Only the shape of the output is checked: its values are the benchmark's
business (no timing is checked in a test)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 180


def bench(script: str, *args: str) -> str:
    """Run ``scripts/SCRIPT`` with ``args``; its stdout (it must exit 0)."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its client processes too, if it has to be stopped
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, f"{script} exited {proc.returncode}: {err}"
    return out


def test_bench_engine_prints_the_build_and_both_drivers() -> None:
    out = bench("bench_engine.py", "--seconds", "0.2", "--rounds", "1")
    assert re.search(r"^engine: (compiled with mypyc|Python source)", out, re.M), out
    for driver in ("ours: playout", "ours: per move"):
        assert re.search(rf"^{driver} +\d+ +\d+ +\d+ +(\d+\.\d+x|-)$", out, re.M), out


def test_bench_ratings_prints_the_fit_beside_its_anchor() -> None:
    out = bench(
        "bench_ratings.py", "--hands", "4000", "--bots", "8", "--bootstrap", "2", "--repeats", "1"
    )
    assert re.search(
        r"^ratio: fit with intervals / anchor = [\d.]+ s / [\d.]+ s = [\d.]+x$", out, re.M
    )
    assert re.search(r"largest rating gap between our fit and the anchor's: [\d.]+ Elo", out), out


def test_bench_arena_prints_each_concurrency_beside_the_ping_pong_bound() -> None:
    out = bench("bench_arena.py", "--boards", "1", "--pings", "50")
    assert re.search(r"bare grpc\.aio ping-pong, ring of 4 processes: p50 [\d.]+ ms", out), out
    for concurrency in (1, 2):
        assert re.search(
            rf"concurrency {concurrency}: [\d.]+ hands/s .*ping-pong bound [\d.]+ hands/s; "
            r"ratio [\d.]+$",
            out,
            re.M,
        ), out


@pytest.mark.skipif(
    sys.platform != "linux",
    reason="bench_server.py reads the server's memory from /proc (Linux only)",
)
def test_bench_server_loses_no_game_and_prints_both_anchors() -> None:
    out = bench(
        "bench_server.py", "--sessions", "8", "--bots", "8", "--processes", "1", "--seconds", "2"
    )
    assert re.search(r"^decisions per second +\d+ +\d+ +\d+ +[\d.]+ +[\d.]+$", out, re.M), out
    assert re.search(r"^games lost or left unrecorded: 0$", out, re.M), out
    assert re.search(r"still marked running 0$", out, re.M), out
