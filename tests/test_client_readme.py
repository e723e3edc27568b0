"""The README's "A bot in Python" examples, kept here as copies and run, so that they cannot rot.

The bot is run the two ways the README shows: in-process with play_local, and as a process that
reads the ARENA_* environment and plays through the real referee on loopback. Once the README
holds the section, a test checks that its code blocks are these copies, character for character.
"""

from __future__ import annotations

import ast
import inspect
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import arena
from arena.cards import Card, mask_of
from arena.client import (
    Bot,
    ClientSettings,
    DecisionView,
    decision_rng,
    play_local,
    playout,
    sample_world,
    serve,
    view_of,
)
from arena.engine import Hand
from arena.errors import ConfigError
from arena.referee import RefereeConfig, RefereeThread
from arena.rules import Rules
from arena.table import TableSpec, Termination

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTION = "### A bot in Python"
WAIT_MS = 30_000
WAIT_S = 120.0

EXAMPLE = '''\
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, highest, lowest, run


class DuckBot(Bot):
    """Passes its highest cards; plays under the card taking the trick when it can."""

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return sorted(view.hand, key=lambda c: c.rank, reverse=True)[: view.pass_count]

    def choose_play(self, view: DecisionView) -> Card:
        winning = view.winning()  # (seat, card) taking the trick so far; None when leading
        if winning is not None:
            top = winning[1]
            under = [c for c in view.legal if c.suit is top.suit and c.rank < top.rank]
            if under:
                return highest(under)  # the highest card that still loses the trick
        return lowest(view.legal)


if __name__ == "__main__":
    run(DuckBot())  # address, token and name from ARENA_ADDRESS, ARENA_TOKEN, ARENA_BOT_NAME
'''

LOCAL_EXAMPLE = """\
from arena.client import Bot, play_local
from duck import DuckBot  # the bot above, saved as duck.py

result = play_local([DuckBot(), Bot(), DuckBot(), Bot()], seed=7)  # a whole game, no network
print(result.totals, result.placings, result.mean_points)
"""


def _duck_bot() -> type[Bot]:
    namespace: dict[str, Any] = {"__name__": "duck"}
    exec(compile(EXAMPLE, "duck.py", "exec"), namespace)
    cls = namespace["DuckBot"]
    assert isinstance(cls, type) and issubclass(cls, Bot)
    return cls


def test_the_example_bot_ducks_and_passes_high() -> None:
    duck = _duck_bot()()
    hand = Hand.deal(Rules(), seed=4, hand_number=0)
    passing = view_of(hand, 0)
    passed = duck.choose_pass(passing)
    assert sorted(c.rank for c in passed) == sorted(c.rank for c in passing.hand)[-3:]
    for seat in range(4):
        hand.pass_cards(seat, duck.choose_pass(view_of(hand, seat)))
    ducked = 0
    while not hand.is_over:
        mover = hand.to_move
        assert mover is not None
        view = view_of(hand, mover)
        card = duck.choose_play(view)
        winning = view.winning()
        if winning is not None and _can_duck(view, winning[1]):
            assert card.suit is winning[1].suit and card.rank < winning[1].rank
            ducked += 1
        hand.play(card)
    assert ducked > 5


def _can_duck(view: DecisionView, top: Card) -> bool:
    return any(c.suit is top.suit and c.rank < top.rank for c in view.legal)


def test_the_local_example_plays_a_whole_game(tmp_path: Path) -> None:
    """Run as a file of its own beside duck.py, as a reader would (it named DuckBot without
    importing it: a NameError run on its own)."""
    (tmp_path / "duck.py").write_text(EXAMPLE)
    (tmp_path / "local.py").write_text(LOCAL_EXAMPLE)
    done = subprocess.run(
        [sys.executable, "local.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    totals = ast.literal_eval(done.stdout.split(")")[0] + ")")
    assert max(totals) >= Rules().target


def test_the_example_runs_as_a_bot_process_from_the_environment(tmp_path: Path) -> None:
    script = tmp_path / "duck.py"
    script.write_text(EXAMPLE)
    names = ("duck", "lowcard", "heuristic", "random_bot")
    referee = RefereeThread(RefereeConfig(), {f"token-{n}": n for n in names})
    referee.start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for name in names:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
            env.update(
                ARENA_ADDRESS=f"127.0.0.1:{referee.port}",
                ARENA_TOKEN=f"token-{name}",
                ARENA_BOT_NAME=name,
            )
            path = script if name == "duck" else ROOT / "sample_bots" / f"{name}.py"
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(path)],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        assert referee.wait_for_bots(names, WAIT_MS), referee.idle()
        spec = TableSpec("readme", Rules(), seed=9, seats=names, board="9", hands=2)
        record = referee.submit(spec).result(WAIT_S)
        assert record.termination is Termination.NORMAL, record.reason
        assert record.faults == (), record.faults
        assert any(d.seat == 0 and not d.forced for d in record.decisions)
        procs[0].send_signal(signal.SIGTERM)
        assert procs[0].wait(WAIT_S) == 0  # as the README says
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        referee.stop(0)


def _python_blocks(text: str) -> list[str]:
    blocks = []
    rest = text
    while "```python\n" in rest:
        rest = rest[rest.index("```python\n") + len("```python\n") :]
        blocks.append(rest[: rest.index("```")])
        rest = rest[rest.index("```") + 3 :]
    return blocks


def test_the_readme_shows_these_examples() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) + len(SECTION) :]
    section = section[: section.index("\n## ")]
    assert _python_blocks(section)[:2] == [EXAMPLE, LOCAL_EXAMPLE]


class _Looks(Bot):
    """Plays like the base class and keeps every view it is shown."""

    def __init__(self) -> None:
        self.views: list[DecisionView] = []

    def choose_play(self, view: DecisionView) -> Card:
        self.views.append(view)
        return super().choose_play(view)


def test_the_prose_around_the_local_example_holds() -> None:
    # "`hands=N` stops after N hands, and `rules=` picks a variant (a `Rules`:
    # `preset("omnibus")` or `Rules(moon=MoonRule.BEST)`, from `arena`; the option's text,
    # `moon="best"`, works too but is not what the type says)".
    best = arena.Rules(moon=arena.MoonRule.BEST)
    text = arena.Rules(moon="best")  # type: ignore[arg-type]
    assert text == best
    for rules in (arena.preset("omnibus"), best):
        result = play_local([Bot()] * 4, rules=rules, seed=7, hands=2)
        assert result.rules is rules and len(result.hands) == 2
    # "In `play_local` they are `move_ms=`/`bank_ms=` as given (nothing is enforced), `None`
    # without them"; `deadline_ms` is their sum, `time_left()` counts the move's own time only.
    bare, timed = _Looks(), _Looks()
    play_local([bare, Bot(), Bot(), Bot()], seed=7, hands=1)
    play_local([timed, Bot(), Bot(), Bot()], seed=7, hands=1, move_ms=60_000, bank_ms=5_000)
    first = bare.views[0]
    assert (first.move_ms, first.bank_ms, first.deadline_ms, first.time_left()) == (None,) * 4
    view = timed.views[0]
    assert (view.move_ms, view.bank_ms, view.deadline_ms) == (60_000, 5_000, 65_000)
    left, before_timeout = view.time_left(), view.time_left(include_bank=True)
    assert left is not None and before_timeout is not None
    assert left <= 60 and left < before_timeout <= 65
    # "`sample_world(view, rng)` and `playout(hand)` let a bot search with the engine".
    world = sample_world(view, random.Random(1))
    assert mask_of(world.hand(view.seat)) == mask_of(view.hand)
    assert sum(playout(world).taken_points) == 26
    # "take them from `decision_rng(seed, view)` so that a game replays from its seed".
    assert decision_rng("s", view).random() == decision_rng("s", view).random()


def test_serve_takes_the_settings_run_would_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    # "`serve(bot, settings)` does the same without exiting": the settings are the ones run()
    # resolves from its arguments and the ARENA_* variables.
    monkeypatch.setenv("ARENA_ADDRESS", "127.0.0.1:1")
    monkeypatch.setenv("ARENA_TOKEN", "t")
    monkeypatch.setenv("ARENA_BOT_NAME", "duck")
    settings = ClientSettings.resolve()
    assert (settings.address, settings.token, settings.name) == ("127.0.0.1:1", "t", "duck")
    assert list(inspect.signature(serve).parameters)[:2] == ["bot", "settings"]


def test_serve_raises_the_config_error_the_readme_names_on_a_tls_mismatch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # run() exits 2 on ARENA_TLS at a plain-text port; serve() raises ConfigError there, which
    # the README did not name among what serve raises, so a bot catching those got a traceback.
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) : text.index("## The competition server")]
    assert "raises `Refused`, `GaveUp` or `Removed`, or `arena.errors.ConfigError`" in section
    referee = RefereeThread(RefereeConfig(), {"t": "duck"})
    referee.start("127.0.0.1:0")
    try:
        monkeypatch.setenv("ARENA_ADDRESS", f"127.0.0.1:{referee.port}")
        monkeypatch.setenv("ARENA_TOKEN", "t")
        monkeypatch.setenv("ARENA_BOT_NAME", "duck")
        monkeypatch.setenv("ARENA_TLS", "1")
        monkeypatch.delenv("ARENA_TLS_CA", raising=False)
        with pytest.raises(ConfigError, match="does not speak TLS on this port"):
            serve(Bot(), ClientSettings.resolve(), give_up_after=60)
    finally:
        referee.stop(0)
