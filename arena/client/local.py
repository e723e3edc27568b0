"""Play :class:`~arena.client.Bot` objects against each other in-process, with no network.

:func:`play_local` runs the rules engine directly and shows each bot the same
:class:`~arena.client.DecisionView` and the same events a referee would, so a bot can be tried
and tuned in a loop of thousands of hands before it ever connects. An illegal answer raises the
engine's :class:`~arena.errors.IllegalMoveError` (with a note naming the bot), because a local
experiment should stop at the first bug rather than hide it behind a substitute card. A card
answered as text is read by the referee's own rule (the spellings the protocol lists), so what
local play accepts, a real game accepts too, and what it refuses raises in the referee's words.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.cards import Card
from arena.client.answers import card_answered, pass_codes, pass_of_codes, play_code
from arena.client.bot import Bot, dispatch_event, listens, warn_slips
from arena.client.events import (
    CardPlayed,
    CardsDealt,
    CardsReceived,
    Event,
    GameEnded,
    GameStarted,
    HandEnded,
    HandStarted,
    TrickWon,
)
from arena.client.view import DecisionKind, DecisionView
from arena.engine import Game, Hand, HandResult, check_rules, check_seed
from arena.errors import ArenaError, CardParseError, ConfigError, IllegalMoveError, StateError
from arena.rules import MAX_PLAYERS, MIN_PLAYERS, PassDirection, Rules
from arena.table import MAX_SEED, Decision, FaultKind, GameRecord, Termination

__all__ = ["LOCAL_GAME_ID", "LocalResult", "play_local", "recorded_views", "view_of"]

LOCAL_GAME_ID = "local"
"""The game id that local play reports in events."""


@dataclass(frozen=True)
class LocalResult:
    """The outcome of a local game: per-hand points and totals, per seat."""

    names: tuple[str, ...]
    """The bots' names, per seat."""
    rules: Rules
    """The rules played."""
    seed: int
    """The game's seed."""
    hands: tuple[HandResult, ...]
    """Every hand's result, in order."""
    totals: tuple[int, ...]
    """Final totals, per seat."""
    placings: tuple[int, ...]
    """Place per seat, 1 for the winner (ties share a place)."""

    @property
    def hand_points(self) -> tuple[tuple[int, ...], ...]:
        """Points per hand, per seat (what each hand added to the totals)."""
        return tuple(h.points for h in self.hands)

    @property
    def mean_points(self) -> tuple[float, ...]:
        """Mean points per hand, per seat."""
        count = max(1, len(self.hands))
        return tuple(t / count for t in self.totals)


def play_local(
    bots: Sequence[Bot],
    rules: Rules | None = None,
    seed: int = 0,
    hands: int | None = None,
    *,
    first_dealer: int = 0,
    names: Sequence[str] | None = None,
    move_ms: int | None = None,
    bank_ms: int | None = None,
    decide_forced_moves: bool = False,
) -> LocalResult:
    """Play one game (or its first ``hands`` hands) of ``bots``, seat 0 first, with the engine.

    ``rules`` defaults to ``Rules()`` sized to the number of bots. Hand k is dealt exactly as a
    referee deals hand k of a table with this seed. ``move_ms``/``bank_ms`` are only shown to the
    bots (local play enforces no clock). Like the referee, a seat with one legal card plays it
    without being asked unless ``decide_forced_moves``.
    """
    if isinstance(bots, str | Bot) or not isinstance(bots, Sequence):
        raise ConfigError(f"bots must be a list of Bot instances, one per seat, got {bots!r}")
    for name, value in (("hands", hands), ("move_ms", move_ms), ("bank_ms", bank_ms)):
        # Checked here: a move_ms of "x" failed mid-game, in the first view built; hands=2.5
        # played 3 hands.
        if value is not None and (type(value) is not int or value < 0):
            raise ConfigError(
                f"{name} must be a whole number{' >= 1' if name == 'hands' else ' >= 0'} "
                f"or None, got {value!r}"
            )
    for i, bot in enumerate(bots):
        if not isinstance(bot, Bot):
            # A class where an instance belongs (play_local([LowCard] * 4)) failed deep inside
            # the first decision, on the method's missing self.
            what = f"the class {bot.__name__}" if isinstance(bot, type) else repr(bot)
            fix = f": give an instance, {bot.__name__}()" if isinstance(bot, type) else ""
            raise ConfigError(f"bots[{i}] is {what}, not a Bot{fix}")
    seats_of: dict[int, list[int]] = {}
    for i, bot in enumerate(bots):
        seats_of.setdefault(id(bot), []).append(i)
    for seats in seats_of.values():
        hooks = listens(bots[seats[0]])
        if len(seats) > 1 and hooks:
            # play_local([b] * 4): the one object got every seat's events, so a bot that keeps
            # state by them (its hand, the cards seen) was fed four seats' at once, unwarned.
            # Not refused: a bot that keeps none (Bot() itself) plays as well shared.
            warnings.warn(
                f"one {type(bots[seats[0]]).__name__} object plays seats "
                f"{', '.join(map(str, seats))}, and its hooks ({', '.join(hooks)}) get the "
                "events of all of them: give each seat an object of its own",
                stacklevel=2,
            )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(
            f"seed must be a whole number from 0 to {MAX_SEED} (2**63 - 1), as a table's, "
            f"got {seed!r:.40}"
        )
    # As a table's: -1 or 2**63 played here a game no referee would deal.
    check_seed(seed)
    if rules is None:
        if not MIN_PLAYERS <= len(bots) <= MAX_PLAYERS:
            # Not "rules.players: must be 3 to 6": the caller set no rules.
            raise ConfigError(
                f"{len(bots)} bots: a game of Hearts has {MIN_PLAYERS} to {MAX_PLAYERS} players"
            )
        rules = Rules(players=len(bots))
    check_rules(rules)
    if len(bots) != rules.players:
        raise ConfigError(f"{len(bots)} bots for a {rules.players}-player game")
    if hands is not None and hands < 1:
        raise ConfigError(f"hands must be a whole number >= 1 or None, got {hands}")
    if not isinstance(decide_forced_moves, bool):
        # "no" is a true value: it turned the option on.
        raise ConfigError(f"decide_forced_moves must be True or False, got {decide_forced_moves!r}")
    seat_names = _check_names(names, len(bots), "bots") if names is not None else None
    if seat_names is None:
        seat_names = _default_names(bots)
    for bot in bots:
        warn_slips(type(bot))
    # As at the referee: a game to the target stops at the rules' hand limit too.
    limit = rules.max_hands if hands is None else min(hands, rules.max_hands)
    table = _LocalTable(bots, rules, seat_names, move_ms, bank_ms, decide_forced_moves, limit)
    game = Game(rules, seed, first_dealer=first_dealer)
    for seat in range(rules.players):
        table.tell(
            seat,
            GameStarted(LOCAL_GAME_ID, seat, seat_names, rules, move_ms, bank_ms, limit),
        )
    while True:
        table.play_hand(game)
        if game.is_over or len(game.results) >= limit:
            break
    placings = game.placings
    ended = GameEnded(
        game_id=LOCAL_GAME_ID,
        termination=Termination.NORMAL,
        seat_status=(Termination.NORMAL,) * rules.players,
        totals=tuple(game.totals),
        placings=placings,
        hands_played=len(game.results),
        message=_ended(
            len(game.results),
            rules.target,
            game.is_over and not game.at_hand_limit,
            hands is None and game.at_hand_limit,
        ),
    )
    table.tell_all(ended)
    return LocalResult(
        names=seat_names,
        rules=rules,
        seed=seed,
        hands=tuple(game.results),
        totals=tuple(game.totals),
        placings=placings,
    )


def _default_names(bots: Sequence[Bot]) -> tuple[str, ...]:
    # Two copies of one class get distinct names, as a referee requires.
    names: list[str] = []
    for bot in bots:
        base = type(bot).__name__
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}-{k}"
        names.append(name)
    return tuple(names)


class _LocalTable:
    """The bots at one local table, and the delivery of requests and events to them."""

    def __init__(
        self,
        bots: Sequence[Bot],
        rules: Rules,
        names: tuple[str, ...],
        move_ms: int | None,
        bank_ms: int | None,
        decide_forced_moves: bool,
        max_hands: int | None,
    ) -> None:
        self.bots = bots
        self.max_hands = max_hands
        self.rules = rules
        self.names = names
        self.move_ms = move_ms
        self.bank_ms = bank_ms
        self.decide_forced_moves = decide_forced_moves

    def tell(self, seat: int, event: Event) -> None:
        dispatch_event(self.bots[seat], event)

    def tell_all(self, event: Event) -> None:
        for bot in self.bots:
            dispatch_event(bot, event)

    def _blame(self, error: ArenaError, seat: int, hand_number: int) -> None:
        error.add_note(f"answered by bot {self.names[seat]!r} in seat {seat}, hand {hand_number}")

    @staticmethod
    def _pass_of(answer: object) -> list[Card]:
        """The cards of a ``choose_pass`` answer; CardParseError saying what came if it is not
        a list of cards or names one in a spelling the referee refuses (a wrong count or a card
        not held is the engine's IllegalMoveError)."""
        codes, wrong = pass_codes(answer)
        if wrong is not None:
            raise CardParseError(wrong)
        return pass_of_codes(codes)

    def play_hand(self, game: Game) -> None:
        hand = game.hand
        number = game.hand_number
        n = self.rules.players
        passing = hand.pass_direction is not PassDirection.HOLD
        self.tell_all(
            HandStarted(
                number, hand.dealer, hand.pass_direction, self.rules.pass_count if passing else 0
            )
        )
        for seat in range(n):
            self.tell(seat, CardsDealt(number, tuple(hand.dealt(seat))))
        if passing:
            for seat in range(n):
                view = view_of(
                    hand, seat, game, self.names, self.move_ms, self.bank_ms, self.max_hands
                )
                chosen = self.bots[seat].choose_pass(view)
                try:
                    hand.pass_cards(seat, self._pass_of(chosen))
                except (IllegalMoveError, CardParseError) as e:
                    self._blame(e, seat, number)
                    raise
            for seat in range(n):
                giver = (seat - hand.pass_direction.offset(n)) % n
                self.tell(
                    seat,
                    CardsReceived(
                        number,
                        giver,
                        tuple(hand.received(seat) or ()),
                        hand.pass_target(seat),
                        tuple(hand.passed(seat) or ()),
                    ),
                )
        while not hand.is_over:
            mover = hand.to_move
            assert mover is not None
            legal = hand.legal_plays()
            if len(legal) == 1 and not self.decide_forced_moves:
                card = legal[0]
            else:
                view = view_of(
                    hand, mover, game, self.names, self.move_ms, self.bank_ms, self.max_hands
                )
                try:
                    card = _card_of(self.bots[mover].choose_play(view))
                except CardParseError as e:
                    self._blame(e, mover, number)
                    raise
            trick_number = hand.trick_number
            try:
                done = hand.play(card, seat=mover)
            except IllegalMoveError as e:
                self._blame(e, mover, number)
                raise
            self.tell_all(CardPlayed(number, trick_number, mover, card))
            if done is not None:
                kitty = tuple(hand.kitty) if done.number == 0 else ()
                points = sum(self.rules.card_points(c) for c in (*done.cards, *kitty))
                self.tell_all(TrickWon(number, done, points, kitty))
        result = game.finish_hand()
        self.tell_all(
            HandEnded(
                hand_number=number,
                points_taken=result.taken_points,
                scores=result.points,
                totals=tuple(game.totals),
                moon=result.moon,
                sun=result.sun,
            )
        )


def _card_of(answer: object) -> Card:
    """The card of a ``choose_play`` answer; CardParseError saying what came if it is none, or
    is text the referee would refuse as not a card."""
    if isinstance(answer, Card):
        return answer
    code, wrong = play_code(answer)
    if wrong is not None:
        raise CardParseError(wrong)
    return card_answered(code)


def view_of(
    hand: Hand,
    seat: int,
    game: Game | None = None,
    names: Sequence[str] | None = None,
    move_ms: int | None = None,
    bank_ms: int | None = None,
    max_hands: int | None = None,
) -> DecisionView:
    """The :class:`DecisionView` of ``seat`` in an engine hand that awaits its pass or play.

    A :class:`StateError` if it awaits nothing of ``seat``: the hand is over, the seat has
    passed already, or another seat is to play.
    """
    # Checked here: None or a Game for the hand failed with an AttributeError ("no attribute
    # 'view'"), and a finished hand gave a PASS view of an empty hand.
    if not isinstance(hand, Hand):
        raise ConfigError(f"view_of takes an engine Hand, e.g. game.hand, got {hand!r:.80}")
    if game is not None and not isinstance(game, Game):
        raise ConfigError(f"game must be the Game the hand belongs to, or None, got {game!r:.80}")
    for name, value in (("move_ms", move_ms), ("bank_ms", bank_ms), ("max_hands", max_hands)):
        # As play_local says it: a negative clock made a view with time that cannot be.
        least = 1 if name == "max_hands" else 0
        if value is not None and (type(value) is not int or value < least):
            raise ConfigError(
                f"{name} must be a whole number >= {least} or None, got {value!r:.40}"
            )
    if hand.is_over:
        raise StateError("the hand is over: no pass or play awaits, so there is no view")
    sv = hand.view(seat)
    # A seat with nothing to decide got a made-up view (a PLAY with no legal card, or a second
    # PASS), and the bot's choice failed far from the cause.
    if sv.current is not None and hand.to_move != seat:
        raise StateError(
            f"seat {seat} is not to play: seat {hand.to_move} is, so seat {seat} has no view"
        )
    if sv.current is None and hand.passed(seat) is not None:
        raise StateError(
            f"seat {seat} has passed already: the hand waits for the other seats' passes, so "
            f"seat {seat} has no view"
        )
    rules = hand.rules
    n = rules.players
    kind = DecisionKind.PASS if sv.current is None else DecisionKind.PLAY
    offset = hand.pass_direction.offset(n)
    return DecisionView(
        kind=kind,
        seat=seat,
        hand=sv.hand,
        legal=sv.hand if kind is DecisionKind.PASS else sv.legal,
        rules=rules,
        players=n,
        dealer=hand.dealer,
        hand_number=game.hand_number if game is not None else 0,
        seat_names=(
            _check_names(names, n, "seats")
            if names is not None
            else tuple(f"seat{s}" for s in range(n))
        ),
        pass_direction=hand.pass_direction,
        pass_count=sv.pass_count if kind is DecisionKind.PASS else 0,
        pass_to=(seat + offset) % n,
        passed=sv.passed or (),
        received=sv.received or (),
        received_from=(seat - offset) % n,
        trick=sv.current,
        tricks=sv.tricks,
        points_taken=sv.points_taken,
        totals=tuple(game.totals) if game is not None else (0,) * n,
        cards_in_hand=tuple(hand.hand_mask(s).bit_count() for s in range(n)),
        hearts_broken=sv.hearts_broken,
        voids=sv.voids,
        forfeited=(False,) * n,
        game_id=LOCAL_GAME_ID,
        max_hands=max_hands,
        move_ms=move_ms,
        bank_ms=bank_ms,
        deadline_ms=None if move_ms is None else move_ms + (bank_ms or 0),
        received_at=time.monotonic(),
        # As at a table: the kitty is face down until the first trick's TrickWon shows it.
        kitty=tuple(hand.kitty) if sv.tricks else (),
    )


def recorded_views(
    record: GameRecord | Mapping[str, Any], seat: int | None = None
) -> Iterator[tuple[Decision, DecisionView]]:
    """Each decision of a game's record (of ``seat``, or of every seat) with the view it was
    taken from, rebuilt by playing the record's cards through the engine from its seed.

    ``record`` is a :class:`~arena.table.GameRecord` or its ``to_dict()`` data (the JSON API's
    ``/api/games/N``). Decisions come in the record's order, the forced moves and the
    fallback's among them (``decision.forced``, ``decision.fallback``: the bot was not asked);
    each view is the one the bot got but for what the record does not hold: ``game_id`` is the
    table id (the bot's log names ``g25-b3-g2-r1``, the referee's count of its games before
    it), ``move_ms`` the table's move time, ``bank_ms`` the bank its recorded times left (the
    bot's own reading differs by the request's trips), and ``forfeited`` marks a seat from the
    fault that forfeited it (one absence counted as one fault, as the referee counts), or from
    the fallback's next move for it when the record names no such fault (a disconnect past the
    grace period, a ban). A record whose cards do not follow from its deal, or whose cards a
    competition server still withholds, raises :class:`ConfigError` saying so.
    """
    if isinstance(record, Mapping):
        withheld = record.get("withheld")
        if withheld:
            # A competition server's /api/games/N while the board's other rotations are still
            # to play: its cards (and seed) are kept back; "seed must be a whole number, got
            # None" read as a damaged record.
            raise ConfigError(
                f"the record's cards are withheld ({withheld}): ask for it again once its "
                "board is done"
            )
        record = GameRecord.from_dict(record)
    if not isinstance(record, GameRecord):
        raise ConfigError(
            f"recorded_views takes a GameRecord or its to_dict() data, got {record!r:.80}"
        )
    spec = record.spec
    players = spec.rules.players
    if seat is not None and (type(seat) is not int or not 0 <= seat < players):
        raise ConfigError(
            f"seat must be a seat number from 0 to {players - 1} or None, got {seat!r:.40}"
        )
    return _recorded_views(record, seat)


def _recorded_views(
    record: GameRecord, only: int | None
) -> Iterator[tuple[Decision, DecisionView]]:
    spec = record.spec
    rules = spec.rules
    n = rules.players
    move_ms = spec.clocks.move_ms
    # As the referee counts them (TableRun): a table's hand count, at most the rules' limit.
    max_hands = rules.max_hands if spec.hands is None else min(spec.hands, rules.max_hands)
    banks = [float(spec.clocks.bank_ms)] * n
    faults = [0] * n
    away = [False] * n
    forfeited = [False] * n
    pass_shown: tuple[bool, ...] | None = None
    game = Game(rules, spec.seed)
    for i, d in enumerate(record.decisions):
        cards = " ".join(d.cards)
        where = f"the record's decision {i} (seat {d.seat}, hand {d.hand}, {d.kind} {cards})"
        if game.hand.is_over and not game.is_over:
            game.finish_hand()
        if game.hand_number != d.hand:
            raise ConfigError(f"{where} is not in hand {game.hand_number}, where play stands")
        passing = d.kind == DecisionKind.PASS.value
        if not passing:
            pass_shown = None
        elif pass_shown is None:
            # Every pass request goes out as the hand starts: a seat forfeited by a pass
            # answered before another's was not forfeited when that other's request was sent.
            pass_shown = tuple(forfeited)
        if d.fallback and d.fault is None:
            forfeited[d.seat] = True  # every move of a forfeited seat is the fallback's
        if only is None or d.seat == only:
            try:
                view = view_of(
                    game.hand,
                    d.seat,
                    game=game,
                    names=spec.seats,
                    move_ms=move_ms,
                    bank_ms=int(banks[d.seat]),
                    max_hands=max_hands,
                )
            except StateError as e:
                raise ConfigError(f"{where} does not follow from the deal: {e}") from None
            shown = pass_shown if pass_shown is not None else tuple(forfeited)
            yield d, dataclasses.replace(view, game_id=spec.table_id, forfeited=shown)
        try:
            if passing:
                game.hand.pass_cards(d.seat, d.cards)
            else:
                game.hand.play(d.cards[0] if d.cards else "", d.seat)
        except ArenaError as e:
            raise ConfigError(f"{where} does not follow from the deal: {e}") from None
        if d.request_id and not d.forced:  # asked: a move of the bot, on its clock
            banks[d.seat] = max(0.0, banks[d.seat] - max(0.0, d.elapsed_ms - move_ms))
            away[d.seat] = False  # its bot was there to be asked
        if d.fault is not None and not (d.fault is FaultKind.DISCONNECT and away[d.seat]):
            # One absence is one fault, however many moves the fallback made meanwhile (the
            # referee counts it so; the record holds a fault for each).
            faults[d.seat] += 1
            if faults[d.seat] > spec.faults.faults_allowed:
                forfeited[d.seat] = True
        if d.fault is FaultKind.DISCONNECT:
            away[d.seat] = True


def _check_names(names: object, count: int, of: str) -> tuple[str, ...]:
    """The seat names given, checked: ``count`` non-empty strings, one per seat."""
    if (
        isinstance(names, str)
        or not isinstance(names, Sequence)
        or not all(isinstance(n, str) and n for n in names)
    ):
        # A string is a sequence of names too, of one letter each: "abcd" seated a, b, c, d.
        raise ConfigError(
            f"names must be a list of bot names (non-empty strings), one per seat, got {names!r}"
        )
    if len(names) != count:  # view_of took two names for four seats, quietly
        raise ConfigError(f"{len(names)} names for {count} {of}")
    return tuple(names)


def _ended(played: int, target: int, to_target: bool, at_hand_limit: bool) -> str:
    """GameEnded.message, worded as the referee words a game that ended normally ("1 hand(s)
    played" here differed from its "1 hand played"): ``to_target`` when a total reached the
    target, ``at_hand_limit`` when a game to the target ran out of hands."""
    words = f"{played} hand{'s' if played != 1 else ''} played"
    if at_hand_limit:
        return f"{words}, no total at {target}: the most hands a game to {target} plays"
    return words + (f" to {target}" if to_target else "")
