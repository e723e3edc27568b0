"""``mypy --strict`` on a user's own code: the public API the README documents is typed.

A bot author's program and a library user's program, using every documented name the way the
README shows, are written to a temporary folder and checked as a user's mypy checks them: the
package found on the path, its own modules' errors not the user's (``follow_imports = silent``,
as for an installed package). They must pass, with no ``Any`` in what the API returns
(``assert_type`` fails on Any). A program of the mistakes a type checker should catch must fail
with exactly those errors. The SDK's module docstrings show a bot too; ``help()`` shows them, so
they must pass as well.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import arena
import arena.client
import arena.client.bot

ROOT = Path(__file__).resolve().parents[1]

BOT_PROGRAM = '''
"""A bot author's code: the README's "A bot in Python" section."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import assert_type

from arena import CardParseError, IllegalMoveError, MoonRule, Rules, preset
from arena.cards import Card, Suit
from arena.client import (
    Bot,
    CardPlayed,
    CardsDealt,
    CardsReceived,
    ClientSettings,
    DecisionView,
    FaultNotice,
    GameEnded,
    GameStarted,
    GaveUp,
    HandEnded,
    HandStarted,
    LocalResult,
    Refused,
    Removed,
    SeatFaulted,
    SessionEnd,
    TimeWarning,
    TrickWon,
    decision_rng,
    highest,
    lowest,
    play_local,
    playout,
    run,
    sample_world,
    serve,
)
from arena.engine import Hand, HandResult, Trick
from arena.errors import ConfigError


class DuckBot(Bot):
    """Passes its highest cards; plays under the card taking the trick when it can."""

    def __init__(self) -> None:
        self.seen: list[Card] = []

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return sorted(view.hand, key=lambda c: c.rank, reverse=True)[: view.pass_count]

    def choose_play(self, view: DecisionView) -> Card:
        winning = view.winning()
        assert_type(winning, tuple[int, Card] | None)
        if winning is not None:
            top = winning[1]
            under = [c for c in view.legal if c.suit is top.suit and c.rank < top.rank]
            if under:
                return highest(under)
        assert_type(view.hand, tuple[Card, ...])
        assert_type(view.trick, Trick | None)
        assert_type(view.tricks, tuple[Trick, ...])
        assert_type(view.points_taken, tuple[int, ...])
        assert_type(view.totals, tuple[int, ...])
        assert_type(view.voids, tuple[frozenset[Suit], ...])
        assert_type(view.rules, Rules)
        assert_type(view.game_id, str)
        assert_type(view.max_hands, int | None)
        assert_type(view.last_hand, bool)
        assert_type(view.move_ms, int | None)
        assert_type(view.bank_ms, int | None)
        assert_type(view.deadline_ms, int | None)
        assert_type(view.kitty, tuple[Card, ...])
        assert_type(view.lead_suit, Suit | None)
        assert_type(view.unseen, tuple[Card, ...])
        assert_type(view.time_left(), float | None)
        assert_type(view.time_left(include_bank=True), float | None)
        return lowest(view.legal)

    def on_game_start(self, event: GameStarted) -> None:
        self.seen.clear()

    def on_hand_start(self, event: HandStarted) -> None:
        self.seen.clear()

    def on_cards_dealt(self, event: CardsDealt) -> None:
        assert_type(event.cards, tuple[Card, ...])

    def on_cards_received(self, event: CardsReceived) -> None:
        assert_type(event.cards, tuple[Card, ...])

    def on_card_played(self, event: CardPlayed) -> None:
        self.seen.append(event.card)

    def on_trick(self, event: TrickWon) -> None:
        assert_type(event.trick, Trick)

    def on_hand_end(self, event: HandEnded) -> None:
        assert_type(event.totals, tuple[int, ...])

    def on_game_end(self, event: GameEnded) -> None:
        assert_type(event.placings, tuple[int, ...])

    def on_fault(self, event: FaultNotice) -> None:
        assert_type(event.message, str)

    def on_seat_fault(self, event: SeatFaulted) -> None:
        assert_type(event.seat, int)

    def on_time_warning(self, event: TimeWarning) -> None:
        assert_type(event.bank_ms, int)


class SearchBot(Bot):
    """Samples a world per legal card and plays it out, as sample_bots/montecarlo.py does."""

    seed = "search"

    def choose_play(self, view: DecisionView) -> Card:
        rng = decision_rng(self.seed, view)
        assert_type(rng, random.Random)
        scores: dict[Card, int] = {}
        for card in view.legal:
            world = sample_world(view, rng)
            assert_type(world, Hand)
            world.play(card)
            result = playout(world, view.totals)
            assert_type(result, HandResult)
            scores[card] = result.points[view.seat]
        return min(view.legal, key=lambda c: scores[c])

    def choose_pass(self, view: DecisionView) -> list[Card]:
        assert_type(playout(sample_world(view, decision_rng(self.seed, view))), HandResult)
        assert_type(decision_rng(7, view), random.Random)  # an integer seed as well
        return list(view.hand[: view.pass_count])


def offline() -> None:
    result = play_local([DuckBot(), Bot(), DuckBot(), Bot()], seed=7)
    assert_type(result, LocalResult)
    assert_type(result.totals, tuple[int, ...])
    assert_type(result.placings, tuple[int, ...])
    assert_type(result.mean_points, tuple[float, ...])
    play_local([SearchBot(), Bot(), Bot(), Bot()], seed=1, hands=2, rules=preset("omnibus"))
    play_local([DuckBot()] * 4, rules=Rules(moon=MoonRule.BEST), move_ms=100, bank_ms=1000)
    try:
        play_local([Bot()] * 4)
    except (IllegalMoveError, CardParseError) as err:
        print(err)


def networked() -> int:
    settings = ClientSettings.resolve()
    assert_type(settings, ClientSettings)
    try:
        end = serve(DuckBot(), settings)
    except (Refused, GaveUp, Removed, ConfigError) as err:
        print(err)
        return 1
    assert_type(end, SessionEnd)
    return 0


if __name__ == "__main__":
    run(DuckBot())
'''

LIBRARY_PROGRAM = '''
"""A library user's code: the engine, hosting tables, the store and the ratings."""

from __future__ import annotations

import concurrent.futures
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from typing import assert_type

from arena import (
    Card,
    FirstLead,
    Game,
    GameEnd,
    Hand,
    HandResult,
    MoonRule,
    PassDirection,
    Phase,
    Rules,
    Settling,
    Violation,
    parse_cards,
    preset,
)
from arena.cards import Rank, Suit
from arena.engine import COMPILED, Trick
from arena.errors import ConfigError, IllegalMoveError
from arena.ratings import RatingFit, TableResult, fit
from arena.ratings.live import LiveRatings
from arena.ratings.sprt import Sprt, SprtDecision
from arena.referee import (
    Accounts,
    BotIdentity,
    Identity,
    Referee,
    RefereeConfig,
    RefereeThread,
    SessionInfo,
    Standing,
    TlsConfig,
    TokenAccounts,
    serve_forever,
)
from arena.referee.accounts import MAX_NOTE_LENGTH, token_key
from arena.referee.loop import run as run_loop
from arena.store import SCHEMA, load_results
from arena.table import Clocks, FaultPolicy, GameRecord, TableSpec, Termination


def engine() -> None:
    rules = preset("omnibus").with_options(["moon=best", "sun=true"])
    assert_type(rules, Rules)
    hand = Hand.deal(rules, seed=42)
    assert_type(hand.phase, Phase)
    assert_type(hand.pass_direction, PassDirection)
    for seat in hand.seats_to_pass:
        hand.pass_cards(seat, hand.hand(seat)[-3:])
    assert_type(hand.legal_plays(), list[Card])
    try:
        hand.play("QS")
    except IllegalMoveError as err:
        assert_type(err.violation, Violation)
    sim = hand.copy()
    sim.playout(random.Random(1))
    assert_type(sim.result().points, tuple[int, ...])
    while not hand.is_over:
        assert_type(hand.play(hand.legal_plays()[0]), Trick | None)
    game = Game(Rules(), seed=7)
    rng = random.Random(7)
    while not game.is_over:
        game.hand.playout(rng)
        assert_type(game.finish_hand(), HandResult)
    assert_type(game.winners, tuple[int, ...])
    print(len(game.results), game.totals, game.placings, game.at_hand_limit)
    typed = Rules(
        moon=MoonRule.BEST,
        first_lead=FirstLead.ANY_CLUB,
        game_end=GameEnd.PASS,
        settling=Settling.HOWELL,
        pass_cycle=(PassDirection.LEFT, PassDirection.HOLD),
    )
    queen = Card(Suit.SPADES, Rank.QUEEN)
    assert_type(Card.parse(str(queen)), Card)
    assert_type(parse_cards("2C 3C QS"), list[Card])
    other = Hand.from_hands(typed, ["2C 3C"] * 4, dealer=0, pass_direction="left")
    assert_type(other.check_play(0, "2C"), Violation | None)
    view = other.view(0)
    guess = Hand.from_view(typed, view, [list(view.hand)] * 4, kitty=())
    assert_type(guess.legal_mask(), int)
    assert_type(guess.play_index(0), bool)
    assert_type(guess.taken_mask(0), int)
    assert_type(Rules.from_dict({"moon": "best"}), Rules)
    assert_type(COMPILED, bool)


def host() -> None:
    names = ["random_bot", "lowcard", "heuristic", "montecarlo"]
    accounts, tokens = TokenAccounts.issue_for(names)
    referee = RefereeThread(RefereeConfig(), accounts)
    port = referee.start("127.0.0.1:0")
    assert_type(port, int)
    bots = [
        subprocess.Popen(
            [sys.executable, f"sample_bots/{name}.py"],
            env={**os.environ, "ARENA_ADDRESS": f"127.0.0.1:{port}", "ARENA_TOKEN": tokens[name]},
        )
        for name in names
    ]
    try:
        assert referee.wait_for_bots(names, 30_000), "the bots did not connect"
        spec = TableSpec(
            "demo",
            Rules(),
            seed=7,
            seats=tuple(names),
            board="7",
            hands=1,
            clocks=Clocks(move_ms=1000, bank_ms=10_000),
            faults=FaultPolicy(max_faults=3, strict=False, grace_ms=5000),
            watchable=True,
        )
        future = referee.submit(spec)
        assert_type(future, concurrent.futures.Future[GameRecord])
        record = future.result(timeout=300)
        assert_type(record.termination, Termination)
        first = record.decisions[0]
        print(first.seat, first.kind, first.cards, f"{first.elapsed_ms:.1f} ms")
        print(record.hands[0].dealt[0], [f.substitute for f in record.faults], record.late)
        assert_type(GameRecord.from_dict(json.loads(json.dumps(record.to_dict()))), GameRecord)
        assert_type(referee.call(lambda r: r.sessions()), list[SessionInfo])
        referee.call(lambda r: r.kick("s1", "bye", may_reconnect=True, reconnect_after_ms=None))
        referee.call(lambda r: r.kick_bot("lowcard", "bye", forfeit=False))
        pairs = referee.call(lambda r: r.forfeit_token(token_key(tokens["lowcard"]), "gone"))
        assert_type(pairs, list[tuple[str, int]])
    finally:
        referee.stop(0, finished=True)
        for bot in bots:
            bot.wait(30)


@dataclass(frozen=True)
class Member:
    name: str
    status: Standing
    note: str = ""


class Members:
    """An account store of the user's own: any object with lookup(token) will do."""

    def lookup(self, token: str) -> Member | None:
        return Member("mybot", Standing.ACTIVE) if token == "t" else None


async def host_async() -> None:
    store: Accounts = Members()
    identity: Identity = BotIdentity("mybot", Standing.BANNED, "x" * MAX_NOTE_LENGTH)
    print(identity.status)
    tls = TlsConfig.from_files("cert.pem", "key.pem", client_ca=None)
    config = RefereeConfig(tls=tls, keepalive_ms=20_000, min_ping_interval_ms=5000)
    referee = Referee(config, store)
    port = await referee.start("127.0.0.1:0")
    assert_type(await referee.wait_for_bots(["mybot"], 1000), bool)
    record = await referee.play_table(TableSpec("t", Rules(), 1, ("mybot",) * 4, "1"))
    assert_type(record, GameRecord)
    await referee.stop(0, finished=True)

    async def main(ref: Referee) -> None:
        await ref.wait_for_bots({"mybot": 2}, 100)

    def ready(port: int) -> None:
        print(port)

    assert_type(serve_forever(config, {"tok": "mybot"}, None, main=main, ready=ready), int)
    print(port)


def results() -> None:
    assert_type(SCHEMA, str)
    rows = load_results("arena.db")
    assert_type(rows, list[TableResult])
    rating = fit(rows)
    assert_type(rating, RatingFit)
    print(rating.interval(rating.names[0]).low, rating.rows()[0].elo)
    test = Sprt(elo0=0.0, elo1=20.0, alpha=0.05, beta=0.05)
    assert_type(test.update(0.6), SprtDecision)
    live = LiveRatings()
    live.update_many(rows)
    print(live.leaderboard()[0].mu)


if __name__ == "__main__":
    engine()
    host()
    run_loop(host_async())
    results()
    try:
        Hand.deal(preset("standard"), 1)
    except ConfigError as err:
        print(err)
'''

MISTAKES = '''
"""Mistakes a type checker must catch: each line marked "expect" has those errors, by code."""

from collections.abc import Sequence

from arena import Rules
from arena.cards import Card
from arena.client import Bot, CardPlayed, DecisionView, TrickWon, decision_rng, play_local, run


class Wrong(Bot):
    def choose_play(self, view: DecisionView) -> Card:
        return "QS"  # expect: return-value

    def choose_pass(self, view: DecisionView) -> Card:  # expect: override
        return view.hand[0]

    def on_trick(self, event: CardPlayed) -> None:  # expect: override
        pass

    def on_card_played(self, event: CardPlayed, seen: int) -> None:  # expect: override
        pass


class Texts(Bot):
    def choose_play(self, view: DecisionView) -> str:  # expect: override
        return "QS"

    async def choose_pass(self, view: DecisionView) -> Sequence[Card]:  # expect: override
        return view.hand[:3]

    async def on_trick(self, event: TrickWon) -> None:  # expect: override
        pass


def misuse(view: DecisionView) -> None:
    play_local([Bot()] * 4, rules="omnibus")  # expect: arg-type
    play_local([Bot()] * 4, movems=5)  # expect: call-arg
    run(Wrong)  # expect: arg-type
    decision_rng(view, "seed")  # expect: arg-type arg-type
    Rules().replace(targt=50)  # expect: call-arg
    Rules().replace(moon=True)  # expect: arg-type
'''

INI = """\
[mypy]
strict = True
"""
"""The user's configuration: strict, nothing about arena. Through MYPYPATH, as the README says,
mypy checks arena's own source by it too (and reported scipy's missing stubs in arena.ratings,
where the repository's pyproject.toml, which mypy reads only in the repository, ignored them)."""

ERROR = re.compile(r"^(?P<file>[^:\n]+\.py):(?P<line>\d+): error: (?P<text>.*)$", re.M)


@dataclass(frozen=True)
class Checked:
    """One mypy run over the programs: its exit code and its errors per file name."""

    returncode: int
    output: str

    def errors(self, name: str) -> list[tuple[int, str]]:
        """(line, message) of each error mypy reported in the file ``name``."""
        return [
            (int(m["line"]), m["text"])
            for m in ERROR.finditer(self.output)
            if Path(m["file"]).name == name
        ]


def _docstring_example(module: object) -> str:
    """The code block (after ``::``) of a module's docstring, as help() shows it."""
    doc = inspect.getdoc(module) or ""
    block = doc.split("::\n", 1)[1]
    lines: list[str] = []
    for line in block.splitlines():
        if line and not line.startswith(" "):
            break  # the prose after the example
        lines.append(line)
    return textwrap.dedent("\n".join(lines)).strip() + "\n"


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """mypy --strict over every program at once (one run: mypy's start-up is most of its time)."""
    folder = tmp_path_factory.mktemp("user_code")
    files = {
        "bot_program.py": BOT_PROGRAM,
        "library_program.py": LIBRARY_PROGRAM,
        "mistakes.py": MISTAKES,
        "client_docstring.py": _docstring_example(arena.client),
        "bot_docstring.py": _docstring_example(arena.client.bot),
    }
    for name, text in files.items():
        (folder / name).write_text(text.lstrip())
    (folder / "mypy.ini").write_text(INI)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            str(folder / ".mypy_cache"),
            "--no-pretty",
            *files,
        ],
        cwd=folder,  # not the repository: its pyproject.toml is not the user's configuration
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Checked(done.returncode, done.stdout + done.stderr)


def test_the_documented_api_passes_mypy_strict_in_a_users_code(checked: Checked) -> None:
    assert checked.errors("bot_program.py") == [], checked.output
    assert checked.errors("library_program.py") == [], checked.output
    in_arena = [m.group(0) for m in ERROR.finditer(checked.output) if "arena/" in m["file"]]
    assert in_arena == [], checked.output


def test_the_sdk_docstring_examples_pass_mypy_strict(checked: Checked) -> None:
    # help(arena.client) showed "def choose_play(self, view):", which --strict refuses
    # ("Function is missing a type annotation").
    assert checked.errors("client_docstring.py") == [], checked.output
    assert checked.errors("bot_docstring.py") == [], checked.output


def test_wrong_answers_and_overrides_are_reported(checked: Checked) -> None:
    assert checked.returncode == 1, checked.output
    expected = [
        (number, code)
        for number, line in enumerate(MISTAKES.lstrip().splitlines(), start=1)
        if "# expect: " in line
        for code in line.rsplit("# expect: ", 1)[1].split()
    ]
    found = [
        (line, text.rsplit("[", 1)[1].rstrip("]")) for line, text in checked.errors("mistakes.py")
    ]
    assert found == expected, checked.output
    texts = dict(checked.errors("mistakes.py"))
    assert 'got "str", expected "Card"' in texts[expected[0][0]]


README_NAMES = {
    "arena": "Card CardParseError FirstLead Game GameEnd Hand IllegalMoveError MoonRule "
    "PassDirection Rules Settling Violation parse_cards preset",
    "arena.cards": "Card Rank Suit parse_cards",
    "arena.client": "Bot ClientSettings DecisionView GaveUp Refused Removed decision_rng highest "
    "lowest play_local playout run sample_world serve",
    "arena.engine": "COMPILED Game Hand deal_order",
    "arena.errors": "CardParseError ConfigError IllegalMoveError SeatError",
    "arena.rules": "Rules preset",
    "arena.referee": "BotIdentity Referee RefereeConfig RefereeThread Standing TlsConfig "
    "TokenAccounts serve_forever",
    "arena.referee.accounts": "MAX_NOTE_LENGTH token_key",
    "arena.referee.loop": "run",
    "arena.table": "Clocks FaultPolicy GameRecord TableSpec",
    "arena.store": "SCHEMA load_results",
    "arena.ratings": "fit",
    "arena.ratings.sprt": "Sprt",
    "arena.ratings.live": "LiveRatings",
}


@pytest.mark.parametrize("module_name", sorted(README_NAMES))
def test_each_name_the_readme_uses_is_exported_and_documented(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in README_NAMES[module_name].split():
        # Under --strict (no implicit re-export) mypy refuses "from M import X" for an X
        # that M imports without listing it in __all__.
        assert name in module.__all__, f"{module_name}.{name} is not in __all__"
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{module_name}.{name} has no docstring"
    assert (Path(arena.__file__).parent / "py.typed").is_file()
