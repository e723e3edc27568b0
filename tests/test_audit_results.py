"""The results side as a newcomer uses it: `arena ratings` and `arena replay` on a database they
may only read, plots that cannot be written, and the rating table's caption at one board."""

from __future__ import annotations

import csv
import io
import os
import re
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_arena_cli import BASE, CLI_TIMEOUT_S, ROOT, stored_db

from arena.ratings import fit
from arena.ratings.report import ratings_table
from arena.ratings.results import TableResult

NO_OVERRIDE = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
"""Root as a user bound by the files' permissions: root may write anything, and would not see a
refusal (its own files, made read-only, are then read-only to it too)."""
PLOT_LIMIT_BYTES = 40_000
"""A file size limit under a ratings plot's size (about 50 KB) but above the 32 KB of the
database's -shm file, which reading makes."""


def arena_reader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `arena ARGS` in ``cwd`` as a user bound by the files' permissions (this one; root
    without the capabilities that let it past them)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which(NO_OVERRIDE[0]) is None:
            pytest.skip("run as root, and no setpriv to read as a user bound by permissions")
        prefix = NO_OVERRIDE
    return subprocess.run(
        [*prefix, *BASE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def read_only_copy(db: Path, *sides: str) -> Path:
    """``db`` (and its files with the suffixes ``sides``) copied into a new folder beside it,
    every file and the folder then made read-only; the copy's path."""
    folder = db.parent / "results"
    folder.mkdir()
    for suffix in ("", *sides):
        shutil.copyfile(f"{db}{suffix}", folder / f"{db.name}{suffix}")
        (folder / f"{db.name}{suffix}").chmod(0o444)
    folder.chmod(0o555)
    return folder / db.name


@pytest.fixture
def writable_after(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path``, its folders made writable again afterwards, for pytest to remove them."""
    yield tmp_path
    for path in tmp_path.rglob("*"):
        if path.is_dir():
            path.chmod(0o755)


def test_ratings_and_replay_read_a_database_they_may_not_write(writable_after: Path) -> None:
    # A results file handed over read-only (or on a read-only mount) was refused as "not a
    # Hearts Arena database (attempt to write a readonly database)": reading a WAL database
    # wants to make its -shm file beside it, and the reader set WAL mode as a writer does.
    db = read_only_copy(stored_db(writable_after))
    before = sorted(p.name for p in db.parent.iterdir())

    rated = arena_reader("ratings", "--db", str(db), "--format", "csv", cwd=db.parent)
    replayed = arena_reader("replay", "0", "--db", str(db), cwd=db.parent)

    assert rated.returncode == 0, rated.stderr
    rows = list(csv.DictReader(io.StringIO(rated.stdout)))
    assert sorted(r["name"] for r in rows) == ["a", "b", "c", "d"]
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith("table b0-g0-r0 (game 0): seed ")
    assert sorted(p.name for p in db.parent.iterdir()) == before  # nothing made beside it


def test_a_read_only_database_with_games_in_its_log_is_refused_in_one_line(
    writable_after: Path,
) -> None:
    # Games committed to the write-ahead log but not yet to the file can be read only through
    # the -shm file, which cannot be made in a read-only folder: one line that says what to do.
    db = stored_db(writable_after)
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")  # keeps the change in db-wal
        writer.execute("UPDATE runs SET updated_at = updated_at + 1")
        writer.commit()
        assert Path(f"{db}-wal").stat().st_size > 0
        copy = read_only_copy(db, "-wal")
    finally:
        writer.close()
    before = sorted(p.name for p in copy.parent.iterdir())

    for args in (("ratings", "--db", str(copy)), ("replay", "0", "--db", str(copy))):
        done = arena_reader(*args, cwd=copy.parent)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert lines[-1].startswith(f"arena: error: {copy}: cannot read it here: ")
        assert "copy s.db and s.db-wal to a folder you can write" in lines[-1]
        assert "Traceback" not in done.stderr
    assert sorted(p.name for p in copy.parent.iterdir()) == before


def limit_file_size() -> None:
    """In the child: files may grow to PLOT_LIMIT_BYTES only, and a write past it fails with
    EFBIG (SIGXFSZ ignored) as a write to a full disk fails with ENOSPC."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (PLOT_LIMIT_BYTES, PLOT_LIMIT_BYTES))


def test_a_plot_that_cannot_be_written_names_it_and_leaves_the_old_one(tmp_path: Path) -> None:
    # A plot cut short (a full disk) was said as "cannot write the output", the words of a
    # failing standard output, and left the cut-off file in place of the old one.
    db = stored_db(tmp_path)
    plot = tmp_path / "elo.png"
    plot.write_bytes(b"the old plot")
    done = subprocess.run(
        [*BASE, "ratings", "--db", str(db), "--format", "csv", "--plot", str(plot)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=limit_file_size,
    )
    assert done.returncode == 2, done.stderr
    history = tmp_path / "elo-history.png"
    assert done.stderr.splitlines() in [
        [f"arena: error: --plot {plot}: cannot write {path} (File too large); give another file"]
        for path in (plot, history)
    ]
    assert plot.read_bytes() == b"the old plot"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["elo.png", "s.db", *(p.name for p in tmp_path.glob("s.db-*"))]
    )


def plot_ratings(db: Path, plot: Path) -> subprocess.CompletedProcess[str]:
    """``arena ratings --db DB --format json --plot PLOT``, run to its end."""
    return subprocess.run(
        [*BASE, "ratings", "--db", str(db), "--format", "json", "--plot", str(plot)],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_plots_are_written_whole_beside_each_other(tmp_path: Path) -> None:
    # Drawn into temporary files and renamed: both plots are there, and nothing else.
    db = stored_db(tmp_path)
    out = tmp_path / "plots"
    out.mkdir()
    done = plot_ratings(db, out / "elo.svg")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["elo-history.svg", "elo.svg"]
    for name in ("elo.svg", "elo-history.svg"):
        assert (out / name).read_text().rstrip().endswith("</svg>")
    assert stat.S_ISREG((out / "elo.svg").stat().st_mode)


def test_a_plot_through_a_dangling_link_is_written_where_the_link_points(tmp_path: Path) -> None:
    # The check that the plot can be written made the link's target and then removed the link
    # itself, not the file it had made: the plot landed beside, as a regular file.
    db = stored_db(tmp_path)
    out = tmp_path / "plots"
    out.mkdir()
    (out / "elo.svg").symlink_to("real.svg")
    done = plot_ratings(db, out / "elo.svg")
    assert done.returncode == 0, done.stderr
    assert (out / "elo.svg").is_symlink()
    assert (out / "real.svg").read_text().rstrip().endswith("</svg>")
    assert sorted(p.name for p in out.iterdir()) == ["elo-history.svg", "elo.svg", "real.svg"]


def sweep(boards: int) -> list[TableResult]:
    """Every rotation of ``boards`` boards, bot a taking no point and the others more."""
    results = []
    for board in range(boards):
        for rotation in range(4):
            names = ["a", "b", "c", "d"]
            players = tuple(names[rotation:] + names[:rotation])
            points = {"a": 0.0, "b": 5.0 + board, "c": 8.0, "d": 13.0 - board}
            results.append(
                TableResult(
                    board=f"b{board}", players=players, points=tuple(points[p] for p in players)
                )
            )
    return results


def test_the_caption_explains_an_open_side_only_where_the_table_shows_one() -> None:
    # At one board every interval is unknown ("-"), yet the caption said "∞: a won every pair,
    # so the results bound its rating from below only", of an ∞ the table did not show.
    one = ratings_table(fit(sweep(1)))
    two = ratings_table(fit(sweep(2)))
    assert "∞" not in str(one.caption)
    assert "∞: a won every pair, so the results bound its rating from below only" in str(
        two.caption
    )


def damage_games_table(db: Path) -> None:
    """Overwrite the first page of ``db``'s games table with garbage, as a failing disk would."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'games'").fetchone()
    conn.close()
    with db.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\x0d" + b"\xff" * (page_size - 1))


def test_a_damaged_database_is_said_in_one_line(tmp_path: Path) -> None:
    # The schema and meta table read well, the games not: a traceback ending in
    # "sqlite3.DatabaseError: database disk image is malformed" from both commands.
    db = stored_db(tmp_path)
    damage_games_table(db)
    for args in (("ratings", "--db", str(db)), ("replay", "5", "--db", str(db))):
        done = subprocess.run(
            [*BASE, *args],
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [
            f"arena: error: {db}: the database is damaged (database disk image is malformed); "
            "a backup, or `sqlite3 FILE .recover`, may save its games"
        ]


@pytest.mark.parametrize(
    ("edit", "args", "says"),
    [
        (
            "UPDATE games SET record = '{not json' WHERE game = 3",
            ("replay", "3"),
            "game 3's record is not JSON (Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)): ",
        ),
        ("DELETE FROM seats WHERE game = 5", ("ratings",), "game 5 of run "),
        # Rated as a 3-seat table beside the others, with no word.
        (
            "DELETE FROM seats WHERE game = 4 AND seat = 3",
            ("ratings",),
            "has seats [0, 1, 2] stored, where its table has 4 (0 to 3): ",
        ),
        (
            "DELETE FROM seats WHERE game = 4 AND seat = 1",
            ("ratings",),
            "has seats [0, 2, 3] stored, where its table has 4 (0 to 3): ",
        ),
        # A ValueError traceback: SQLite keeps text in an INTEGER column.
        (
            "UPDATE seats SET points = 'x' WHERE game = 4 AND seat = 0",
            ("ratings",),
            "has seat 0 stored as (",
        ),
    ],
    ids=["record not JSON", "seats gone", "last seat gone", "a seat gone", "points not a number"],
)
def test_a_database_edited_by_hand_is_said_in_one_line(
    tmp_path: Path, edit: str, args: tuple[str, ...], says: str
) -> None:
    # A JSONDecodeError traceback from arena replay, a KeyError one from arena ratings.
    db = stored_db(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute(edit)
    conn.close()
    done = subprocess.run(
        [*BASE, *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert says in line, line
    assert line.endswith(
        "the database is damaged (or was edited by hand); a backup, or `sqlite3 FILE .recover`, "
        "may save its games"
    ), line


def test_a_database_locked_by_another_program_is_not_called_foreign(tmp_path: Path) -> None:
    # Held in an exclusive lock past the busy timeout (another program's long transaction), a
    # database was "not a Hearts Arena database (database is locked)".
    db = stored_db(tmp_path)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("UPDATE runs SET updated_at = updated_at")
        done = subprocess.run(
            [*BASE, "replay", "0", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    finally:
        holder.close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"arena: error: {db}: the database is locked by another program (database is locked, "
        "for 10 s); try again once it lets go"
    ]


def test_a_change_to_a_read_only_competition_makes_no_file_and_works_once_it_is_writable(
    writable_after: Path,
) -> None:
    # `bots ban` on a read-only file made -shm and -wal files as read-only as it beside it, and
    # once the file was made writable, every command still failed on them.
    added = arena_reader("bots", "add", "alice", "--db", "c.db", cwd=writable_after)
    assert added.returncode == 0, added.stderr
    db = writable_after / "c.db"
    db.chmod(0o444)
    refused = arena_reader("bots", "ban", "alice", "--db", "c.db", cwd=writable_after)
    assert refused.returncode == 2 and refused.stderr == (
        "arena: error: c.db: cannot write the database (it is read-only to this user); make the "
        "file and its folder writable and try again\n"
    ), refused.stderr
    assert sorted(p.name for p in writable_after.iterdir()) == ["c.db"]
    served = arena_reader(
        "serve", "--db", "c.db", "--port", "0", "--web-port", "0", cwd=writable_after
    )
    assert served.returncode == 2 and served.stderr.endswith(
        "arena: error: c.db: cannot write the database (it is read-only to this user); make the "
        "file and its folder writable and try again\n"
    ), served.stderr
    assert sorted(p.name for p in writable_after.iterdir()) == ["c.db"]
    db.chmod(0o644)
    # Side files of another user's program that has the database open, read-only to this user:
    # the file itself was not the trouble, as the advice said.
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("PRAGMA journal_mode=WAL")
        other.execute("UPDATE server_bots SET note = note")  # a write: the -wal file holds it
        for end in ("-wal", "-shm"):
            (writable_after / f"c.db{end}").chmod(0o444)
        for command in (("bots", "ban", "alice"), ("serve", "--port", "0", "--web-port", "0")):
            sides = arena_reader(*command, "--db", "c.db", cwd=writable_after)
            assert sides.returncode == 2 and re.search(
                r"arena: error: c\.db: cannot write the database: (c\.db-wal and )?c\.db-shm "
                r"beside it (is|are) read-only to this user; make (it|them) writable and try "
                r"again \(not removed: a -wal file holds the last games\)\n$",
                sides.stderr,
            ), sides.stderr
    finally:
        for end in ("-wal", "-shm"):
            (writable_after / f"c.db{end}").chmod(0o644)
        other.close()
    banned = arena_reader("bots", "ban", "alice", "--db", "c.db", cwd=writable_after)
    assert banned.returncode == 0, banned.stderr
