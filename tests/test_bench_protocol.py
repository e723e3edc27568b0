"""scripts/bench_protocol.py runs end to end: the referee and the bare ping-pong on loopback with
real client processes, every figure printed (its values are the benchmark's business, not a
test's: no timing is checked here)."""

from __future__ import annotations

import re
from pathlib import Path

from test_bench_scripts import bench


def test_the_protocol_benchmark_prints_both_comparisons() -> None:
    out = bench("bench_protocol.py", "--tables", "2", "--rounds", "1", "--seconds", "0.5")
    assert re.search(r"request \(referee -> bot\) \d+ B, answer \(bot -> referee\) \d+ B", out)
    for what in ("1 table of 4 bots", "2 tables at once"):
        assert re.search(rf"referee, {what} +\d+ decisions/s", out), out
    assert len(re.findall(r"referee / bare: decisions +\d+\.\d%", out)) == 2, out
    # One pair per comparison: too few for the median's confidence interval, and it says so.
    assert out.count("too few pairs for a 95% interval (give --rounds 6 or more)") == 2, out
    assert len(re.findall(r"bare, trivial bot clients, \d rings? of 4 +\d+ decisions/s", out)) == 2
    # CPU time per round trip: the serving process's, and its clients' where /proc tells.
    clients = r" clients \d+\.\d{3}" if Path("/proc/self/stat").exists() else ""
    assert len(re.findall(rf"cpu: server \d+\.\d{{3}}{clients} ms/rt", out)) == 6, out
