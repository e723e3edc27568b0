"""The benchmark scripts refuse a bad number with argparse's one-line usage error, at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("script", "flags", "says"),
    [
        ("bench_engine.py", ["--rounds", "0"], "argument --rounds: 0: give 1 or more"),
        ("bench_engine.py", ["--seconds", "nan"], "argument --seconds: nan: give a number"),
        ("bench_protocol.py", ["--tables", "0"], "argument --tables: 0: give 1 or more"),
        ("bench_protocol.py", ["--rounds", "x"], "argument --rounds: 'x' is not a whole number"),
        (
            "bench_protocol.py",
            ["--seconds", "0"],
            "argument --seconds: 0: give a number of seconds",
        ),
        ("bench_arena.py", ["--pings", "-5"], "argument --pings: -5: give 1 or more"),
        ("bench_ratings.py", ["--bots", "1"], "argument --bots: 1: give 4 or more"),
        ("bench_ratings.py", ["--bootstrap", "1"], "argument --bootstrap: 1: give 0 (skip) or 2"),
        ("bench_ratings.py", ["--seed", "-1"], "argument --seed: -1: give 0 or more"),
        ("bench_server.py", ["--processes", "0"], "argument --processes: 0: give 1 or more"),
        ("bench_server.py", ["--sessions", "4", "--bots", "8"], "8 bots for 4 sessions"),
    ],
)
def test_a_bad_number_is_one_usage_line(script: str, flags: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}: error: ") and says in last


def test_bench_server_refuses_a_kept_folder_it_used_before(tmp_path: Path) -> None:
    (tmp_path / "bench.db").write_bytes(b"")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_server.py"), "--keep", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"argument --keep: {tmp_path} holds an earlier run's bench.db: give a new folder")
    )


def test_bench_server_refuses_a_kept_folder_that_is_a_file(tmp_path: Path) -> None:
    # It failed at mkdir, after the parse, with a FileExistsError traceback.
    kept = tmp_path / "results"
    kept.write_bytes(b"")
    for keep, says in (
        (kept, f"argument --keep: {kept} is a file, not a folder: give a folder"),
        (kept / "sub", f"argument --keep: cannot make the folder {kept / 'sub'}: "),
    ):
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "bench_server.py"), "--keep", str(keep)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert says in done.stderr.strip().splitlines()[-1]
