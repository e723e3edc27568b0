"""`arena ratings` and `arena sprt` audited against the README, claim by claim, as a newcomer runs
them: what each refuses, and what the tables and plots say."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from test_arena_cli import BASE, CLI_TIMEOUT_S, HEUR, PY, ROOT, arena, invoke, stored_db
from test_store import play_record

from arena.config import build_config
from arena.director.schedule import schedule
from arena.store import Store

ILLEGAL_BOT = """
from arena.client import Bot, lowest, run


class Illegal(Bot):
    \"\"\"Plays a card it may not whenever it holds one: under --strict, forfeited at once.\"\"\"

    def choose_pass(self, view):
        return list(view.hand)[: view.pass_count]

    def choose_play(self, view):
        illegal = [c for c in view.hand if c not in view.legal]
        return illegal[0] if illegal else lowest(view.legal)


run(Illegal())
"""


def test_a_pgf_plot_without_latex_is_refused_before_the_fit(tmp_path: Path) -> None:
    # The README takes any format matplotlib writes, and the refusal's list names .pgf; but
    # matplotlib typesets a .pgf with LaTeX (xelatex): without it the table was printed, then a
    # RuntimeError's traceback, exit code 1.
    db = stored_db(tmp_path)
    no_latex = tmp_path / "bin"  # a PATH with no program on it: no xelatex, whatever is installed
    no_latex.mkdir()
    done = subprocess.run(
        [*BASE, "ratings", "--db", str(db), "--plot", "elo.pgf"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(no_latex)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # refused before the fit, as a folder that is missing is
    assert done.stderr == (
        "arena: error: --plot elo.pgf: matplotlib writes .pgf with xelatex (LaTeX), which is not "
        "installed; install it, or give a file ending in .png, .svg or .pdf\n"
    )
    assert not list(tmp_path.glob("*.pgf")) and not list(tmp_path.glob(".*"))


def test_a_plot_named_as_the_database_is_refused_and_the_database_kept(tmp_path: Path) -> None:
    # "Only read": a database whose name ends like a plot was overwritten by the plot (or its
    # history), and read as "not a Hearts Arena database" from then on.
    stored = stored_db(tmp_path).read_bytes()
    for db, plot, what in (
        (tmp_path / "r.pdf", tmp_path / "r.pdf", "the plot"),
        (
            tmp_path / "h-history.png",
            tmp_path / "h.png",
            f"its history plot {tmp_path}/h-history.png",
        ),
    ):
        db.write_bytes(stored)
        refused = invoke("ratings", "--db", str(db), "--plot", str(plot))
        assert refused.exit_code == 2, refused.output
        assert refused.stderr == (
            f"arena: error: --plot {plot}: {what} would overwrite the database --db {db}; "
            "give another file\n"
        )
        assert db.read_bytes() == stored
        assert invoke("ratings", "--db", str(db)).exit_code == 0


def words(text: str) -> str:
    """``text`` with its lines joined and its runs of spaces made one (rich centres a wrapped
    caption with spaces)."""
    return " ".join(text.split())


def test_an_anchor_that_won_every_pair_says_the_others_are_open_not_itself(tmp_path: Path) -> None:
    # With --anchor on the bot that won every pair, the caption said that the results bound
    # *its* rating from below only: the anchor is 0, without an interval; what is open is every
    # other bot's lower side (they never took a pair from it), which it did not explain.
    (tmp_path / "illegal.py").write_text(ILLEGAL_BOT)
    bad = f"{PY} illegal.py"
    ran = arena(
        "run", "--bot", f"good={HEUR}", "--bot", f"bad1={bad}", "--bot", f"bad2={bad}",
        "--players", "3", "--boards", "2", "--strict", "--concurrency", "3", "--db", "u.db",
        cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    db = str(tmp_path / "u.db")
    mean = invoke("ratings", "--db", db)
    assert mean.exit_code == 0, mean.output
    # The premise: good won every pair (the two others forfeited every game).
    assert "∞: good won every pair, so the results bound its rating from below only" in words(
        mean.stdout
    )
    anchored = invoke("ratings", "--db", db, "--anchor", "good")
    assert anchored.exit_code == 0, anchored.output
    rows = [line for line in anchored.stdout.splitlines() if "bad" in line]
    assert len(rows) == 2 and all("(-∞, " in row for row in rows)
    text = words(anchored.stdout)
    assert "good won every pair, so the results bound its rating" not in text
    assert (
        "∞: good, the anchor, won every pair, so the results bound the others' ratings from "
        "above only" in text
    )


def test_a_missing_database_names_the_ones_there_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `arena demo` stores its games in arena-demo.db; a bare `arena ratings` after it looked
    # for arena.db and said only "--db arena.db: no such database" (replay: "arena.db: no such
    # database"), with no word on what to give instead.
    stored_db(tmp_path)  # s.db
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)  # where the default --db, arena.db, is looked for
    hint = "no such database; give --db the database a run stored its games in"
    for args, said in (
        (["ratings"], f"--db arena.db: {hint} (this folder has s.db)"),
        (["replay", "1"], f"--db arena.db: {hint} (this folder has s.db)"),
        (["replay", "1", "--db", "x"], f"--db x: {hint} (this folder has s.db)"),
        (
            ["ratings", "--db", "empty/x.db"],
            f"--db empty/x.db: {hint} (none in empty: arena run --db PATH makes one)",
        ),
    ):
        done = invoke(*args)
        assert done.exit_code == 2 and done.stdout == "", done.output
        assert done.stderr == f"arena: error: {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "s.db"]


def test_a_plot_named_per_table_size_is_refused_before_the_report(tmp_path: Path) -> None:
    # With 3- and 4-seat results the plots are NAME-3p.png, NAME-4p-history.png, ...: a folder
    # in the place of one was refused only once both rating tables had been printed.
    # One database holds one run: 3-seat games are copied in as a hand-made merge would.
    db = tmp_path / "mixed.db"
    for bots in ("abcd", "abc"):
        part = tmp_path / f"{bots}.db"
        bot_list = [f"{b}=true" for b in bots]
        config = build_config(bots=bot_list, players=len(bots), boards=2, db=part)
        with Store.open(part) as store:
            store.claim(config.run_id, "batch", config.identity(), 8)
            for table in schedule(config):
                store.save_game(config.run_id, table.index, play_record(table.spec))
    shutil.copy(tmp_path / "abcd.db", db)
    with contextlib.closing(sqlite3.connect(db)) as merged, merged:
        merged.execute("ATTACH ? AS other", (str(tmp_path / "abc.db"),))
        for name in ("runs", "games", "seats", "hands"):
            merged.execute(f"INSERT INTO {name} SELECT * FROM other.{name}")
    (tmp_path / "my-4p-history.png").mkdir()
    refused = invoke("ratings", "--db", str(db), "--plot", str(tmp_path / "my.png"))
    assert refused.exit_code == 2 and refused.stdout == "", refused.output
    assert refused.stderr == (
        f"arena: error: --plot {tmp_path}/my.png: cannot write {tmp_path}/my-4p-history.png "
        "(it is a folder); give a file you can write\n"
    )
    assert not list(tmp_path.glob("my*.png*"))[1:]  # the folder alone: no plot written
    shown = invoke("ratings", "--db", str(db), "--plot", str(tmp_path / "ok.png"))
    assert shown.exit_code == 0, shown.output
    assert sorted(p.name for p in tmp_path.glob("ok*")) == [
        "ok-3p-history.png",
        "ok-3p.png",
        "ok-4p-history.png",
        "ok-4p.png",
    ]
