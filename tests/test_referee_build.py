"""The referee's compiled hot path (setup.py builds ``arena/referee/{wire,game}.py`` with mypyc).

The compiled modules must referee exactly as their Python source does, must never stand in for
sources edited since the build, and ``HEARTS_ARENA_PURE_ENGINE=1`` must run the source. The
suite's own install is the build under test (``scripts/test.sh`` reinstalls before the tests).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_engine_build import require_compiler

from arena import _compiled
from arena.referee import game, wire

ROOT = Path(__file__).resolve().parent.parent
PURE = _compiled.PURE_VARIABLE
GAME_TIMEOUT_S = 300

# One full game on loopback with real bot processes that misbehave in the ways the table judges
# on its slower paths (an illegal card, a card not held, bytes that are not a PlayRequest), so
# that faults, substitutes and the records' texts are compared too.
GAME = """
import asyncio, json, subprocess, sys
from arena.referee import Referee, RefereeConfig, TokenAccounts, game
from arena.rules import Rules
from arena.table import Clocks, FaultPolicy, TableSpec

MODES = ("good", "illegal", "notheld", "garbage")

async def main():
    names = [f"{m}-bot" for m in MODES]
    accounts, tokens = TokenAccounts.issue_for(names)
    referee = Referee(RefereeConfig(), accounts)
    port = await referee.start("127.0.0.1:0")
    procs = [
        subprocess.Popen([sys.executable, "tests/bots/raw_bot.py", f"--address=127.0.0.1:{port}",
                          f"--token={tokens[n]}", f"--name={n}", f"--mode={m}"],
                         stdout=subprocess.DEVNULL)
        for n, m in zip(names, MODES)
    ]
    try:
        assert await referee.wait_for_bots(names, 60_000)
        spec = TableSpec("t", Rules(), 7, tuple(names), "b", hands=None,
                         clocks=Clocks(move_ms=20_000, bank_ms=60_000, handshake_ms=60_000),
                         faults=FaultPolicy(max_faults=10_000))
        record = await referee.play_table(spec)
    finally:
        await referee.stop(0)
        for p in procs:
            p.wait(30)
    print(json.dumps({
        "build": game.BUILD,
        "decisions": [[d.hand, d.seat, d.kind, d.request_id, list(d.cards), d.forced,
                       d.fault and d.fault.value, d.fallback] for d in record.decisions],
        "faults": [[f.seat, f.kind.value, f.detail, f.sent, list(f.substitute)]
                   for f in record.faults],
        "hands": [list(h.points) for h in record.hands],
        "totals": list(record.totals),
        "termination": record.termination.value,
        "reason": record.reason,
    }))

asyncio.run(main())
"""


def _play(**env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k != PURE} | env
    done = subprocess.run(
        [sys.executable, "-c", GAME],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=GAME_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_installed_referee_is_compiled_where_the_machine_can_compile() -> None:
    if os.environ.get(PURE) == "1":
        pytest.skip(f"{PURE}=1 asks for the Python source")
    require_compiler("referee")
    assert game.COMPILED and wire.COMPILED, (game.BUILD, wire.BUILD)
    assert game.BUILD == wire.BUILD == "compiled with mypyc"
    assert type(wire.card_played).__name__ != "function"  # a compiled function


def test_an_editable_reinstall_finds_the_installed_referee_current() -> None:
    # setup.py looked for the sources' digest in the modules' shims, never in the group's
    # library that holds it: every `pip install -e .` compiled the referee again (a minute or
    # two, mypy installed into pip's build environment, and the Python source running meanwhile).
    if not (game.COMPILED and wire.COMPILED):
        pytest.skip(f"the installed referee is not compiled ({game.BUILD})")
    source = (ROOT / "setup.py").read_text()
    helpers: dict[str, object] = {"__file__": str(ROOT / "setup.py"), "__name__": "setup_helpers"}
    # Everything setup.py defines, without its closing setup() call, which would run a build.
    exec(compile(source[: source.rindex("\nsetup(")], "setup.py", "exec"), helpers)
    referee_current = helpers["referee_current"]
    assert callable(referee_current)
    assert referee_current(ROOT / "arena") is True


@pytest.mark.slow
def test_the_compiled_referee_referees_a_game_as_the_python_source_does() -> None:
    compiled = _play()  # the install's build (whatever this process was asked for)
    pure = _play(**{PURE: "1"})
    assert pure["build"] == f"Python source ({PURE}=1)"
    assert compiled["faults"], "the misbehaving bots committed no fault: nothing was compared"
    for record in (compiled, pure):
        record.pop("build")
        # The seats pass at once, so the order in which their passes are recorded follows the
        # bots' timing; the records themselves must be the same.
        for key in ("decisions", "faults"):
            record[key] = sorted(record[key], key=json.dumps)  # type: ignore[call-overload]
    assert compiled == pure


def test_a_compiled_module_runs_its_source_once_the_source_is_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The guard each compiled module ends with, on a copy of the real sources.
    monkeypatch.delenv(PURE, raising=False)
    for name in _compiled.REFEREE_MODULES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "arena" / name, tmp_path / name)
    built_from = _compiled.sources_digest(str(tmp_path))
    current: dict[str, object] = {"__name__": "arena.referee.wire"}
    assert _compiled.guard(current, built_from, folder=str(tmp_path)) == (
        True,
        "compiled with mypyc",
    )
    assert "card_played" not in current  # the compiled definitions stand

    source = tmp_path / "referee" / "wire.py"
    source.write_text(source.read_text() + "\nEDITED = True\n")
    stale: dict[str, object] = {"__name__": "arena.referee.wire"}
    assert _compiled.guard(stale, built_from, folder=str(tmp_path)) == (
        False,
        "Python source (the sources changed since the build; reinstall to rebuild)",
    )
    assert stale["EDITED"] is True
    assert callable(stale["card_played"])  # the source's definitions, run from the edited file
    # The source's own guard call (its _BUILT_FROM is empty) neither recursed nor claimed a build.
    assert stale["COMPILED"] is False and stale["BUILD"] == _compiled.NOT_BUILT


def test_the_python_source_runs_when_asked_for() -> None:
    probe = "from arena.referee import game, wire; print(game.COMPILED, wire.COMPILED, game.BUILD)"
    environ = os.environ | {PURE: "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=environ, capture_output=True, text=True, check=True
    )
    compiled_game, compiled_wire, build = done.stdout.strip().split(" ", 2)
    assert (compiled_game, compiled_wire) == ("False", "False")
    if game.COMPILED:  # the compiled modules were imported and handed over to the source
        assert build == f"Python source ({PURE}=1)"
