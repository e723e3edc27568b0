"""The SDK's view under a kitty: the first trick's TrickWon shows the kitty to every seat.

From then on the view must count those cards as seen: ``view.kitty`` holds them, ``view.unseen``
leaves them out, and :func:`sample_world` deals them to no seat (a search that gave them to an
opponent would play against cards that every seat knows lie in no hand). Real games throughout:
local play with the rules engine, and a real referee on loopback with bots run by :func:`serve`
on threads, one of them through a TCP relay that the test cuts once the kitty is shown: every
request carries the kitty shown (``PublicState.kitty_cards``), so a bot that keeps no state, or
reconnects after the TrickWon that showed it, still knows it.

The kitty has one rule in the engine (``Rules.kitty``: the odd cards go, with their points, to
the first trick's winner); the variants below differ in what decides the first trick and its
cards (table size, the opening lead, the pass, penalty cards on the first trick, spot hearts).
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.cards import Card, mask_of
from arena.client import (
    Bot,
    DecisionKind,
    DecisionView,
    HandStarted,
    TrickWon,
    decision_rng,
    play_local,
    sample_world,
    voids_shown,
)
from arena.client.remote import ClientSettings, serve
from arena.engine import Phase
from arena.referee import RefereeConfig, RefereeThread
from arena.rules import FirstLead, Rules
from arena.table import Clocks, FaultKind, TableSpec, Termination

KITTY_RULES = {
    "three": Rules(players=3, kitty=True),
    "five": Rules(players=5, kitty=True),
    "six": Rules(players=6, kitty=True),
    "five-any-club": Rules(players=5, kitty=True, first_lead=FirstLead.ANY_CLUB),
    "six-left-of-dealer": Rules(
        players=6, kitty=True, first_lead=FirstLead.LEFT_OF_DEALER, penalty_on_first_trick=True
    ),
    "three-no-pass": Rules(players=3, kitty=True, pass_count=0),
    "three-spot": Rules(players=3, kitty=True, spot_hearts=True, queen_penalty=25),
}
SEEDS = range(4)
HANDS = 2
"""Hands per local game: the second checks that one hand's kitty does not stay in the next."""
GAME_TIMEOUT_S = 120.0
LOBBY_WAIT_MS = 30_000
CALM = Clocks(move_ms=10_000, bank_ms=30_000, handshake_ms=30_000)
"""Clocks no thread-run bot comes near, so that only the test's own cut makes a fault."""


class Witness(Bot):
    """Plays a random legal card (from decision_rng); keeps each view beside the kitty shown."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.shown: tuple[Card, ...] = ()
        """The kitty the TrickWon events of this hand have shown so far."""
        self.seen: list[tuple[DecisionView, tuple[Card, ...]]] = []

    def on_hand_start(self, event: HandStarted) -> None:
        """A new hand: its kitty is face down again."""
        self.shown = ()

    def on_trick(self, event: TrickWon) -> None:
        """Note the kitty when a trick shows it."""
        if event.kitty:
            self.shown = event.kitty

    def choose_pass(self, view: DecisionView) -> list[Card]:
        """Keep the view; pass the base class's cards."""
        self.seen.append((view, self.shown))
        return list(super().choose_pass(view))

    def choose_play(self, view: DecisionView) -> Card:
        """Keep the view; play a legal card at random, the same in every run."""
        self.seen.append((view, self.shown))
        return decision_rng(self.seed, view).choice(view.legal)


def _index(card: Card) -> int:
    """A card's place in the deck's order (clubs, diamonds, hearts, spades; by rank)."""
    return card.index


def _where(view: DecisionView) -> str:
    """Where a view stands, for assertion messages."""
    return f"hand {view.hand_number}, trick {view.trick_number}, seat {view.seat}"


def _assert_unseen_agrees(view: DecisionView, shown: tuple[Card, ...]) -> None:
    """``unseen`` is what the seat neither holds, nor saw played, nor was shown in the kitty."""
    rules = view.rules
    where = _where(view)
    unseen = mask_of(view.unseen)
    leaked = [str(c) for c in shown if unseen & c.bit]
    assert not leaked, f"{where}: the kitty shown ({leaked}) is still listed as unseen"
    parts = [mask_of(view.hand), mask_of(view.played), mask_of(shown), unseen]
    union = 0
    for part in parts:
        union |= part
    # One deck: together they are every card in play, and their sizes add up to it, so no card
    # is in two of them.
    assert union == rules.deck_mask, where
    assert sum(p.bit_count() for p in parts) == len(rules.cards_in_deck), where
    # What is unseen is the others' cards and the kitty while it is face down: nothing else.
    others = sum(view.cards_in_hand) - len(view.hand)
    assert len(view.unseen) == others + rules.kitty_size - len(shown), where


def _assert_public_state_agrees(view: DecisionView, shown: tuple[Card, ...]) -> None:
    """The rest of what the view derives is as the cards seen say, the kitty shown included."""
    rules = view.rules
    where = _where(view)
    taken = [0] * view.players
    for trick in view.tricks:
        assert trick.winner is not None
        taken[trick.winner] += sum(rules.card_points(c) for c in trick.cards)
    if shown:
        # The kitty went, with its points, to the first trick's winner.
        first = view.tricks[0].winner
        assert first is not None
        taken[first] += sum(rules.card_points(c) for c in shown)
    assert view.points_taken == tuple(taken), where
    assert sum(view.cards_in_hand) == len(rules.cards_in_deck) - rules.kitty_size - len(
        view.played
    ), where
    assert view.voids == voids_shown(
        (*view.tricks, *([view.trick] if view.trick else [])), view.players
    ), where
    if view.kind is DecisionKind.PLAY:
        # Only a card played breaks hearts: a heart in the kitty does not.
        assert view.hearts_broken == bool(mask_of(view.played) & rules.breaking_mask), where


def _assert_agrees(
    seen: list[tuple[DecisionView, tuple[Card, ...]]], rng: random.Random | None = None
) -> int:
    """Every view agrees with the kitty shown before it; how many came after it was shown.

    ``unseen`` first, over every view: the defect, where it is present, fails there.
    With ``rng``, worlds sampled from the views after the kitty was shown are checked too.
    """
    for view, shown in seen:
        _assert_unseen_agrees(view, shown)
    for view, shown in seen:
        _assert_public_state_agrees(view, shown)
        assert view.kitty == shown, _where(view)
        if shown and rng is not None:
            _assert_worlds_hide_no_shown_kitty(view, shown, rng)
    return sum(1 for _, shown in seen if shown)


def _assert_worlds_hide_no_shown_kitty(
    view: DecisionView, shown: tuple[Card, ...], rng: random.Random
) -> None:
    """Worlds sampled from the view put the kitty shown in the kitty, and match the view."""
    world = sample_world(view, rng)
    where = _where(view)
    assert tuple(world.kitty) == shown, where
    dealt = [c for s in range(view.players) for c in world.hand(s)]
    assert not set(dealt) & set(shown), where
    assert world.phase is Phase.PLAY and world.to_move == view.seat
    mine = world.view(view.seat)
    assert mine.points_taken == view.points_taken, where  # the kitty's points included
    assert mine.voids == view.voids, where
    assert tuple(len(world.hand(s)) for s in range(view.players)) == view.cards_in_hand, where


def _play(rules: Rules, seed: int, hands: int, first_dealer: int = 0) -> list[Witness]:
    """One local game of Witnesses, every card asked for (forced ones too)."""
    bots = [Witness(f"w{seed}") for _ in range(rules.players)]
    play_local(
        bots,
        rules=rules,
        seed=seed,
        hands=hands,
        first_dealer=first_dealer,
        decide_forced_moves=True,
    )
    return bots


@pytest.mark.parametrize("rules", list(KITTY_RULES.values()), ids=list(KITTY_RULES))
def test_local_views_count_the_kitty_as_seen_once_the_first_trick_shows_it(rules: Rules) -> None:
    rng = random.Random(3)
    checked = 0
    for seed in SEEDS:
        for bot in _play(rules, seed, HANDS):
            checked += _assert_agrees(bot.seen, rng)
            for view, shown in bot.seen:
                # The kitty shows with the first trick, and only then.
                assert bool(shown) == (view.kind is DecisionKind.PLAY and bool(view.tricks))
                if shown:
                    assert len(shown) == rules.kitty_size
    assert checked  # not vacuous: views after the kitty was shown were checked


@settings(max_examples=40, deadline=None)
@given(
    players=st.sampled_from([3, 5, 6]),
    first_lead=st.sampled_from(list(FirstLead)),
    pass_count=st.sampled_from([0, 1, 3]),
    seed=st.integers(0, 2**32 - 1),
    dealer=st.integers(0, 5),
)
def test_unseen_hand_played_and_the_shown_kitty_partition_the_deck(
    players: int, first_lead: FirstLead, pass_count: int, seed: int, dealer: int
) -> None:
    rules = Rules(players=players, kitty=True, first_lead=first_lead, pass_count=pass_count)
    rng = random.Random(seed)
    for bot in _play(rules, seed, 1, first_dealer=dealer % players):
        _assert_agrees(bot.seen, rng)


# ---- over the network --------------------------------------------------------------------------


class Relay:
    """A TCP relay to the referee that the test can cut, as a dropped network would."""

    ACCEPT_POLL_S = 0.1

    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(self.ACCEPT_POLL_S)  # so that close() ends the accept loop
        self.port: int = self.server.getsockname()[1]
        self.accepted = 0
        self.closing = False
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, name="relay", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closing:
            try:
                client, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.accepted += 1
                self.open += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Drop every connection now (no goodbye, no status: the streams just break)."""
        with self.lock:
            socks, self.open = self.open, []
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        """Stop accepting and drop what is open."""
        self.closing = True
        self.thread.join()
        self.server.close()
        self.cut()


class CutWitness(Bot):
    """Keeps every view; at its first view past hand 0's first trick it cuts its own connection.

    It has no on_trick hook on purpose: its views must know the kitty from the requests alone.
    """

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.views: list[DecisionView] = []
        self.cut_after: int | None = None
        """How many views it had when it cut the connection."""

    def choose_play(self, view: DecisionView) -> Card:
        """Keep the view (cut the connection the first time the kitty has been shown)."""
        self.views.append(view)
        if self.cut_after is None and view.hand_number == 0 and view.tricks:
            self.cut_after = len(self.views)
            self.relay.cut()  # this answer is lost; the referee asks again or plays for it
        return decision_rng("cut", view).choice(view.legal)


@pytest.fixture
def referee() -> Iterator[RefereeThread]:
    """A referee on its own thread, on a free port of 127.0.0.1."""
    ref = RefereeThread(RefereeConfig(), {f"token-{n}": n for n in ("witness", "east", "west")})
    ref.start("127.0.0.1:0")
    try:
        yield ref
    finally:
        ref.stop(0)


def test_network_views_count_the_kitty_as_seen_and_keep_it_across_a_reconnect(
    referee: RefereeThread,
) -> None:
    relay = Relay(referee.port)
    witness = CutWitness(relay)
    direct = f"127.0.0.1:{referee.port}"
    settings_of = {
        "witness": ClientSettings(
            f"127.0.0.1:{relay.port}", "token-witness", "witness", decide_forced_moves=True
        ),
        "east": ClientSettings(direct, "token-east", "east"),
        "west": ClientSettings(direct, "token-west", "west"),
    }
    bots: dict[str, Bot] = {"witness": witness, "east": Bot(), "west": Bot()}
    names = ("witness", "east", "west")
    rules = Rules(players=3, kitty=True)
    try:
        with ThreadPoolExecutor(len(names)) as pool:
            sessions = [
                pool.submit(serve, bots[n], settings_of[n], give_up_after=30) for n in names
            ]
            try:
                assert referee.wait_for_bots(names, LOBBY_WAIT_MS), referee.idle()
                spec = TableSpec(
                    "kitty", rules, seed=9, seats=names, board="9", hands=2, clocks=CALM
                )
                record = referee.submit(spec).result(GAME_TIMEOUT_S)
            finally:
                referee.stop(0, finished=True)  # no more games: every serve() returns
            for session in sessions:
                session.result(GAME_TIMEOUT_S)
    finally:
        relay.close()
    assert record.termination is Termination.NORMAL, record.reason
    # The only faults are the cut's: the witness was away when a decision fell due.
    assert {f.kind for f in record.faults} <= {FaultKind.DISCONNECT}, record.faults
    assert relay.accepted >= 2 and witness.cut_after is not None  # it did reconnect
    after = witness.views[witness.cut_after :]
    assert any(v.hand_number == 0 and v.tricks for v in after), "no view after the reconnect"
    assert {v.hand_number for v in witness.views} == {0, 1}
    kitties = [tuple(sorted(map(Card.parse, hand.kitty), key=_index)) for hand in record.hands]
    assert [len(k) for k in kitties] == [rules.kitty_size] * 2
    # Every seat is shown the kitty with the first trick: what the views must count as seen.
    seen = [(v, kitties[v.hand_number] if v.tricks else ()) for v in witness.views]
    assert _assert_agrees(seen, random.Random(1))
