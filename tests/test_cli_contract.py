"""What the README promises of `arena sprt` and `arena ratings` refusals: one line that names the
flag at fault and says what is true of the database, exit code 2."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from test_store import play_record
from typer.testing import CliRunner, Result

from arena.cli import app
from arena.config import build_config
from arena.director.schedule import schedule
from arena.store import Store
from arena.table import Termination

ARENA = str(Path(sys.executable).with_name("arena"))


def invoke(*args: str) -> Result:
    """Run the `arena` command in this process (for refusals that start no process)."""
    return CliRunner().invoke(app, list(args))


def test_a_filler_without_a_name_is_refused_naming_filler_not_bot(tmp_path: Path) -> None:
    done = invoke(
        "sprt",
        "--bot",
        "old=python old.py",
        "--bot",
        "new=python new.py",
        "--filler",
        "lowcard.py",
        "--db",
        str(tmp_path / "s.db"),
    )
    assert done.exit_code == 2
    assert done.stderr == (
        "arena: error: --filler 'lowcard.py': expected NAME=COMMAND, "
        "e.g. --filler mine='python bot.py'\n"
    )
    assert not (tmp_path / "s.db").exists()


def test_a_database_of_unrated_games_says_so_rather_than_that_none_is_stored(
    tmp_path: Path,
) -> None:
    # As `arena serve` leaves a database whose only tables were cut short by a kill -9.
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], db=tmp_path / "i.db")
    tables = schedule(config)[:3]
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), len(tables))
        for table in tables:
            cut = dataclasses.replace(
                play_record(table.spec), termination=Termination.INTERRUPTED, reason="stopped"
            )
            store.save_game(config.run_id, table.index, cut)
    done = invoke("ratings", "--db", str(config.db))
    assert done.exit_code == 2
    assert done.stderr == (
        f"arena: error: --db {config.db}: none of its 3 stored game(s) can be rated: each was "
        "interrupted (or its referee failed), so its scores say nothing about the bots\n"
    )
    by_run = invoke("ratings", "--db", str(config.db), "--run", config.run_id)
    assert by_run.exit_code == 2
    assert by_run.stderr.startswith(f"arena: error: --run {config.run_id}: none of its 3 ")


def test_an_sprt_refused_at_its_database_prints_its_error_line_and_nothing_else(
    tmp_path: Path,
) -> None:
    # A database that holds a batch: the test's header used to go to stdout before the refusal.
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], db=tmp_path / "b.db")
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 1)
    done = subprocess.run(
        [ARENA, "sprt", "--bot", "old=true", "--bot", "new=true", "--db", str(config.db)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"arena: error: {config.db} holds another run (")
