"""`arena run` end to end: real referee, real bot processes, real SQLite, in this process.

The CLI's own behaviour (exit codes, one-line errors, signals) is in test_arena_cli.py and
test_arena_resume.py; here the director is driven through :func:`run_batch` to keep it quick.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import shlex
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from arena.config import RunConfig, build_config
from arena.director.progress import PlainReporter
from arena.director.replay import replay_text
from arena.director.run import run_batch
from arena.director.schedule import schedule
from arena.errors import ConfigError
from arena.store import Store, load_results
from arena.table import GameRecord, Termination

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)

# The misbehaving-bots batch. Its honest bots must never fault, even on a loaded machine, so
# they get a clock of whole seconds (the whole bank for one stall: move time plus bank); the
# slow bot answers far later than that, so it faults whatever the load. One fault is tolerated
# and the next forfeits the seat, which bounds what the slow bot costs each game (about one move
# time plus bank, then one move time).
HONEST_MOVE_TIME = "1s"
HONEST_TIME_BANK = "1s"
SLOW_DELAY_MS = 5_000
"""The slow bot's delay before each answer: well past move time plus bank."""
FAULTS_TOLERATED = 1
CRASH_GRACE = "200ms"
"""The reconnect grace. The crashed seat is forfeited at once whatever it is (the director tells
the referee: test_director_crash.py); a short one only bounds what any other disconnect costs."""


def sample(name: str) -> str:
    """The command of a sample bot."""
    return f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / name))}"


def suite_bot(name: str, *args: str) -> str:
    """The command of one of this suite's bots (tests/arena_bots, tests/bots)."""
    return shlex.join([sys.executable, str(ROOT / "tests" / name), *args])


DETERMINISTIC = [
    f"low={sample('lowcard.py')}",
    f"heur={sample('heuristic.py')}",
    f"hash1={suite_bot('arena_bots/hashbot.py')}",
    f"hash2={suite_bot('arena_bots/hashbot.py')}",
]


def run(config: RunConfig) -> tuple[int, int, int, str]:
    """Run a batch; (stored, played, total, progress text)."""
    out = io.StringIO()
    outcome = run_batch(config, PlainReporter(out))
    assert not outcome.interrupted
    return outcome.stored, outcome.played, outcome.total, out.getvalue()


def test_a_batch_plays_every_board_in_every_rotation_and_resumes_as_done(tmp_path: Path) -> None:
    config = build_config(
        bots=DETERMINISTIC, boards=2, concurrency=2, db=tmp_path / "a.db", move_time="2s"
    )
    stored, played, total, progress = run(config)
    assert (stored, played, total) == (8, 8, 8)
    assert "8 games to play of 8" in progress and "8/8 games" in progress

    planned = {t.spec.table_id: t.spec for t in schedule(config)}
    with Store.open(config.db, create=False) as store:
        records = dict(store.records(config.run_id))
    assert sorted(records) == list(range(8))
    for index, record in records.items():
        assert record.spec == planned[record.spec.table_id]
        assert record.termination.value == "normal" and not record.faults
        [hand] = record.hands
        assert len(hand.tricks) == 13
        assert sum(record.totals) in (26, 78)  # 26 points, or a moon: 3 x 26
        assert (
            tmp_path / "a-out" / "replays" / f"{index:06d}-{record.spec.table_id}.jsonl"
        ).exists()
    for bot in ("low", "heur", "hash1", "hash2"):
        assert "started process 0" in (tmp_path / "a-out" / "logs" / f"{bot}.log").read_text()

    results = load_results(config.db)
    assert len(results) == 8
    assert {r.board for r in results} == {"1:0", "1:1"}
    # Every bot held every seat's cards of each board once.
    for board in ("1:0", "1:1"):
        seatings = [r.players for r in results if r.board == board]
        for seat in range(4):
            assert sorted(s[seat] for s in seatings) == ["hash1", "hash2", "heur", "low"]

    lines = list(replay_text(records[5], 5))
    assert lines[0].startswith("table b1-g0-r1 (game 5): seed ")
    assert any(line.startswith("  trick 13:") for line in lines)
    assert lines[-1] == "ended: normal: 1 hand played"

    # The same command again has nothing left to play, and starts no bot.
    again = run(config)
    assert again[:3] == (8, 0, 8)


def test_misbehaving_bots_are_recorded_and_the_run_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "crashed-once"
    monkeypatch.setenv("ARENA_TEST_CRASH_MARKER", str(marker))
    monkeypatch.setenv("ARENA_TEST_CRASH_AT", "3")
    config = build_config(
        bots=[
            f"low={sample('lowcard.py')}",
            f"crash={suite_bot('arena_bots/crashbot.py')}",
            f"illegal={suite_bot('bots/raw_bot.py', '--mode', 'illegal')}",
            f"slow={suite_bot('bots/raw_bot.py', '--mode', 'slow', f'--delay-ms={SLOW_DELAY_MS}')}",
        ],
        boards=1,
        concurrency=1,
        move_time=HONEST_MOVE_TIME,
        time_bank=HONEST_TIME_BANK,
        max_faults=FAULTS_TOLERATED,
        grace=CRASH_GRACE,
        db=tmp_path / "m.db",
    )
    stored, played, total, progress = run(config)
    assert (stored, played, total) == (4, 4, 4)
    said = "its log's last line: crashbot: crashing on purpose"  # a last line, not an error
    assert f"bot crash (process 0) exited with code 3; {said}" in progress
    assert marker.exists()

    db = sqlite3.connect(config.db)
    kinds = dict(db.execute("SELECT bot, GROUP_CONCAT(DISTINCT kind) FROM faults GROUP BY bot"))
    assert "illegal-card" in kinds["illegal"]
    assert "timeout" in kinds["slow"]  # and its late answers may arrive as wrong ids
    assert "low" not in kinds
    statuses = dict(db.execute("SELECT bot, GROUP_CONCAT(DISTINCT status) FROM seats GROUP BY bot"))
    assert statuses["low"] == "normal"
    assert statuses["slow"] != "normal"  # too many timeouts forfeit the seat
    [(bot, code, said)] = db.execute("SELECT bot, exit_code, stderr FROM crashes").fetchall()
    assert (bot, code) == ("crash", 3) and "crashing on purpose" in said
    [(game, seat)] = db.execute("SELECT game, seat FROM seats WHERE crashed = 1").fetchall()
    reason = db.execute("SELECT reason FROM games WHERE game = ?", (game,)).fetchone()[0]
    assert f"bot crash in seat {seat} crashed (exit code 3)" in reason
    db.close()
    with Store.open(config.db, create=False) as store:
        faults = {row.bot: row for row in store.bot_faults(config.run_id)}
    assert faults["crash"].exits == 1 and faults["crash"].crashed_games == 1
    assert faults["low"].total_faults == 0 and faults["slow"].forfeits >= 1


def test_another_configuration_on_the_same_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    first = build_config(bots=DETERMINISTIC, boards=1, concurrency=2, db=db)
    assert run(first)[:3] == (4, 4, 4)
    other = build_config(bots=DETERMINISTIC, boards=2, concurrency=2, db=db)
    with pytest.raises(ConfigError, match=r"holds another run \(--boards 1, not 2\)"):
        run_batch(other, PlainReporter(io.StringIO()))
    assert len(load_results(db)) == 4


def test_a_replay_missing_for_a_stored_game_is_written_at_the_next_start(tmp_path: Path) -> None:
    # A stop between a game's commit and its replay file (or a resume with another --out)
    # leaves stored games without replays: the next start writes them from the database.
    config = build_config(bots=DETERMINISTIC, boards=1, concurrency=2, db=tmp_path / "m.db")
    assert run(config)[:3] == (4, 4, 4)
    folder = config.out / "replays"
    files = sorted(p.name for p in folder.iterdir())
    assert len(files) == 4
    lost = folder / files[2]
    kept = lost.read_bytes()
    lost.unlink()
    assert run(config)[:3] == (4, 0, 4)  # nothing left to play, no bot started
    assert lost.read_bytes() == kept
    elsewhere = dataclasses.replace(config, out=tmp_path / "other-out")
    run(elsewhere)
    assert sorted(p.name for p in (elsewhere.out / "replays").iterdir()) == files


def test_a_bot_that_now_exits_silently_is_not_quoted_from_an_earlier_run(tmp_path: Path) -> None:
    # The bot's log is appended to, run after run (a resume, or another --db with an --out an
    # older version made, which has no mark naming its run): a start that fails must quote
    # what this process wrote, never an earlier run's last line (here the SDK's goodbye, which
    # would read as the referee's doing).
    broken = tmp_path / "broken"
    flaky = tmp_path / "flaky.py"
    flaky.write_text(
        "import os, runpy, sys\n"
        f"if os.path.exists({str(broken)!r}):\n"
        "    sys.exit(1)  # silently, as a compiled bot missing a setting may\n"
        "print('words of the earlier run', flush=True)\n"
        f"runpy.run_path({str(ROOT / 'sample_bots' / 'lowcard.py')!r}, run_name='__main__')\n"
    )
    bots = [f"flaky={PY} {shlex.quote(str(flaky))}", *DETERMINISTIC[:3]]
    out = tmp_path / "shared-out"
    first = build_config(bots=bots, boards=1, concurrency=1, db=tmp_path / "a.db", out=out)
    assert run(first)[:3] == (4, 4, 4)
    assert "words of the earlier run" in (out / "logs" / "flaky.log").read_text()

    broken.touch()
    (out / ".arena-run.json").unlink()  # else refused: the folder is a.db's
    second = build_config(bots=bots, boards=1, concurrency=1, db=tmp_path / "b.db", out=out)
    with pytest.raises(ConfigError) as caught:
        run_batch(second, PlainReporter(io.StringIO()))
    assert str(caught.value) == (
        f"bot 'flaky': '{PY} {flaky}' exited before it connected, with code 1 (it wrote nothing)"
    )
    assert not second.db.exists()


def _running(pid: int) -> bool:
    """Whether process ``pid`` is alive (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_what_a_bot_starts_itself_ends_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A helper a bot started (an engine, say) outlived the run, with init as its parent: the
    # bot was stopped, its process group only signalled while the bot itself was alive.
    helpers = tmp_path / "helpers"
    monkeypatch.setenv("ARENA_TEST_HELPERS", str(helpers))
    config = build_config(
        bots=[f"parent={suite_bot('arena_bots/parentbot.py')}", *DETERMINISTIC[:3]],
        boards=1,
        concurrency=1,
        move_time="2s",
        db=tmp_path / "p.db",
    )
    stored, _, total, _ = run(config)
    assert stored == total == 4
    pids = [int(line) for line in helpers.read_text().split()]
    assert pids
    deadline = time.monotonic() + 10  # a deadline only: SIGKILL is not instant
    while left := [pid for pid in pids if _running(pid)]:
        if time.monotonic() > deadline:
            for pid in left:  # not left behind by the failure
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"helpers still running: {left}")
        time.sleep(0.05)


def _a_stored_record(tmp_path: Path) -> GameRecord:
    """A game record as a real batch stores it, for the progress reporter's tests."""
    config = build_config(bots=DETERMINISTIC, boards=1, concurrency=1, db=tmp_path / "r.db")
    run(config)
    with Store.open(config.db, create=False) as store:
        return next(r for _, r in store.records(config.run_id))


def test_the_progress_rate_runs_from_the_first_games_start(tmp_path: Path) -> None:
    # It ran from the progress's start: the bots' start-up before the first game (seconds, for
    # many bots on a loaded machine) made a resumed run's first figures far too low.
    from arena.director.progress import Standings

    record = _a_stored_record(tmp_path)
    out = io.StringIO()
    reporter = PlainReporter(out)
    reporter.start(2, 0, Standings([b.split("=")[0] for b in DETERMINISTIC]))
    now = time.time()
    reporter.game(dataclasses.replace(record, started_at=now - 4.0, finished_at=now - 2.0))
    reporter.game(dataclasses.replace(record, started_at=now - 2.0, finished_at=now))
    line = out.getvalue().splitlines()[-1]
    assert line.startswith("arena: 2/2 games, 0.5/s, 0:00:00 left"), line


def test_a_resumed_run_says_its_rate_at_its_next_tenth_not_at_its_first_game(
    tmp_path: Path,
) -> None:
    # The first game after a resume printed a line (its step counted from 0, not from the
    # games stored), whose rate was that one game's alone: 1.0/s and 7 minutes left for a run
    # going at 5/s.
    from arena.director.progress import Standings

    record = _a_stored_record(tmp_path)
    out = io.StringIO()
    reporter = PlainReporter(out)
    reporter.start(560, 83, Standings([b.split("=")[0] for b in DETERMINISTIC]))
    now = time.time()
    for done in range(84, 113):
        reporter.game(dataclasses.replace(record, started_at=now - 1.0, finished_at=now))
        lines = out.getvalue().splitlines()
        assert len(lines) == 1 + (done == 112), lines  # the next tenth: 112 of 560
    assert lines[-1].startswith("arena: 112/560 games, ")


def test_the_leader_is_never_a_bot_that_lost_more_games_by_forfeit(tmp_path: Path) -> None:
    # A forfeited seat's points are the fallback's, which takes few: a bot that forfeited 11 of
    # its 18 games was named the leader ("bad 7.84 pts/hand") while last in the ratings.
    from arena.director.progress import Standings

    record = _a_stored_record(tmp_path)
    seats = record.spec.seats
    best = min(range(len(seats)), key=lambda s: (record.totals[s], seats[s]))
    standings = Standings(seats)
    standings.add(record)
    assert standings.leader() == f"{seats[best]} {record.totals[best]:.2f} pts/hand"
    forfeited = tuple(
        Termination.DISCONNECT if s == best else t for s, t in enumerate(record.seat_status)
    )
    standings.add(dataclasses.replace(record, seat_status=forfeited))
    assert standings.top(1)[0][0] == seats[best]  # still the fewest points per hand
    assert not standings.leader().startswith(seats[best]), standings.leader()
    # A resumed run counts the forfeits stored, as it counts the points.
    resumed = Standings(seats)
    resumed.add_totals(seats[best], 1, 0, 0)
    resumed.add_forfeits(seats[best], 2)
    alone = Standings([seats[best]])
    alone.add_totals(seats[best], 2, 1, 0)
    alone.add_forfeits(seats[best], 2)
    assert alone.leader() == f"{seats[best]} 0.50 pts/hand (2 games lost by forfeit)"
    assert resumed.top(1)[0][4] == 2


def test_the_rate_is_not_guessed_from_fewer_games_than_tables_at_once(tmp_path: Path) -> None:
    # Five tables at once, each game 1 s: the first to end said 1.0/s (one game in one game's
    # time) for a run going at 5/s.
    from arena.director.progress import Standings

    record = _a_stored_record(tmp_path)
    out = io.StringIO()
    reporter = PlainReporter(out)
    reporter.start(100, 19, Standings([b.split("=")[0] for b in DETERMINISTIC]), parallel=5)
    now = time.time()
    for _ in range(11):
        reporter.game(dataclasses.replace(record, started_at=now - 1.0, finished_at=now))
    first, later = out.getvalue().splitlines()[1:]
    assert first.startswith("arena: 20/100 games, ?/s, ? left; "), first
    assert re.match(r"arena: 30/100 games, 1\d\.\d/s, 0:00:0\d left; ", later), later
