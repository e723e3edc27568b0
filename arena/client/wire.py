"""Translation between the hearts.v1 messages and the SDK's Python values.

Only the client's direction of each message is handled: requests and events in, decisions out.
Unknown enum values (from a newer referee) become None rather than errors, as the protocol asks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Iterable, Sequence
from functools import lru_cache

from arena.cards import CARDS, Card
from arena.client.events import (
    CardPlayed,
    CardsDealt,
    CardsReceived,
    Event,
    FaultNotice,
    GameEnded,
    GameStarted,
    HandEnded,
    HandStarted,
    SeatFaulted,
    TimeWarning,
    TrickWon,
)
from arena.client.view import DecisionKind, DecisionView, voids_shown
from arena.engine import Trick
from arena.errors import CardParseError, RulesError
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.rules import PassDirection, Rules
from arena.table import FaultKind, Termination

__all__ = [
    "PROTOCOL_VERSION",
    "decision_kind",
    "event_of",
    "pass_decision",
    "play_decision",
    "view_of_request",
]

log = logging.getLogger("arena.client")

PROTOCOL_VERSION = int(bot_pb.DESCRIPTOR.package.rpartition(".v")[2])
"""The protocol version this SDK speaks: the N of the generated package hearts.vN."""

_CARD_OF = {str(c): c for c in CARDS}
RULES_CACHE_SIZE = 16
"""Distinct rule sets remembered (a session rarely sees more than one)."""


def cards(codes: Iterable[str]) -> tuple[Card, ...]:
    """Cards from the referee's upper-case codes (any other spelling is parsed the slow way)."""
    try:
        return tuple(map(_CARD_OF.__getitem__, codes))
    except KeyError:
        return tuple(Card.parse(code) for code in codes)


@lru_cache(maxsize=RULES_CACHE_SIZE)
def rules_of_json(text: str) -> Rules:
    """The engine's rules from ``Rules.rules_json`` (cached: it is the same all game). An option
    this SDK does not know, or a value of one it cannot read (from a newer referee: v1 may add
    them), is left out, with one warning per rule set; the request's legal cards stay the
    referee's."""
    data = json.loads(text)
    if not isinstance(data, dict):
        return Rules.from_dict(data)  # refused, saying what it is
    # Every request of the game went unanswered (the seat forfeited) for an option a newer
    # referee added, where the protocol asks that what is unknown be skipped.
    known = {f.name for f in dataclasses.fields(Rules)}
    kept = {name: value for name, value in data.items() if name in known}
    while True:
        try:
            rules = Rules(**kept)
            break
        except RulesError as e:
            if e.field not in kept:
                raise
            del kept[e.field]  # a value this SDK cannot read: a newer one
        except TypeError:
            raise RulesError("?", f"cannot read the rules {text[:80]!r}") from None
    if len(kept) < len(data):
        left = ", ".join(f"{name}={data[name]!r}" for name in sorted(set(data) - set(kept)))
        log.warning(
            "the referee's rules have options this SDK does not know or read (%s): the view's "
            "rules leave them out (the legal cards are still the referee's); a newer referee's "
            "options need a newer arena package, a wrong value is the organiser's to mend",
            left,
        )
    return rules


def rules_of(message: game_pb.Rules) -> Rules:
    """The engine's rules from a Rules message (its ``rules_json`` is the authority)."""
    if not message.rules_json:
        raise CardParseError("the referee sent rules without rules_json")
    return rules_of_json(message.rules_json)


def _direction(value: int, seats: tuple[int, int, int] | None = None) -> PassDirection:
    """The direction ``value``; one this SDK does not know (a newer referee's) is read from
    ``seats`` (giver, receiver, players) where the message names them."""
    try:
        name = game_pb.PassDirection.Name(value).removeprefix("PASS_DIRECTION_")  # type: ignore[arg-type]
        return PassDirection[name]
    except (ValueError, KeyError):
        pass
    if seats is not None and value != game_pb.PASS_DIRECTION_UNSPECIFIED:
        giver, receiver, players = seats
        for direction in PassDirection if max(giver, receiver) < players else ():
            with contextlib.suppress(RulesError):
                if direction.offset(players) == (receiver - giver) % players:
                    return direction  # the same seat: a bot cannot tell them apart
    # Said in words: protobuf's "no name defined" and a bare KeyError('UNSPECIFIED') were what
    # the bot's log showed of a referee's unset or newer direction.
    raise ValueError(f"pass direction {value} is not one this SDK knows")


def _fault_kind(value: int) -> FaultKind | None:
    try:
        name = ev_pb.FaultKind.Name(value)  # type: ignore[arg-type]
        return FaultKind[name.removeprefix("FAULT_KIND_")]
    except (ValueError, KeyError):
        return None


def _termination(value: int) -> Termination | None:
    try:
        name = ev_pb.Termination.Name(value)  # type: ignore[arg-type]
        return Termination[name.removeprefix("TERMINATION_")]
    except (ValueError, KeyError):
        return None


def _completed(message: game_pb.Trick) -> Trick:
    return Trick(message.trick_number, message.leader, cards(message.cards), message.winner)


def _in_progress(message: game_pb.Trick) -> Trick:
    return Trick(message.trick_number, message.leader, cards(message.cards), None)


def decision_kind(request: bot_pb.DecisionRequest) -> DecisionKind | None:
    """The kind of a request, or None for a kind this SDK does not know."""
    if request.kind == bot_pb.DECISION_KIND_PLAY:
        return DecisionKind.PLAY
    if request.kind == bot_pb.DECISION_KIND_PASS:
        return DecisionKind.PASS
    return None


def view_of_request(
    request: bot_pb.DecisionRequest, kind: DecisionKind, received_at: float
) -> DecisionView:
    """The view of a PASS or PLAY request; it needs nothing but the request itself."""
    state = request.state
    players = state.players
    tricks = tuple(map(_completed, state.completed_tricks))
    current = _in_progress(state.current_trick) if state.HasField("current_trick") else None
    if kind is DecisionKind.PASS:
        current = None
        pass_to = request.pass_to_seat
        direction = _direction(request.pass_direction, (request.your_seat, pass_to, players))
    else:
        pass_to = state.passed_to_seat
        direction = _direction(state.pass_direction, (request.your_seat, pass_to, players))
    hand = cards(request.hand)
    return DecisionView(
        kind=kind,
        seat=request.your_seat,
        hand=hand,
        # As sent: an empty list was taken for the whole hand, and a play request offering no
        # legal card was answered with any card (the README promises an ERROR line instead).
        legal=cards(request.legal_cards),
        rules=rules_of(state.rules),
        players=players,
        dealer=state.dealer,
        hand_number=request.hand_number,
        seat_names=tuple(state.seat_names),
        pass_direction=direction,
        pass_count=request.pass_count if kind is DecisionKind.PASS else 0,
        pass_to=pass_to,
        passed=cards(state.passed_cards),
        received=cards(state.received_cards),
        received_from=state.received_from_seat,
        trick=current,
        tricks=tricks,
        points_taken=tuple(state.hand_points),
        totals=tuple(state.game_totals),
        cards_in_hand=tuple(state.cards_in_hand),
        hearts_broken=state.hearts_broken,
        voids=voids_shown((*tricks, *((current,) if current is not None else ())), players),
        forfeited=tuple(state.forfeited) or (False,) * players,
        game_id=request.game_id,
        max_hands=state.max_hands or None,
        # move_deadline_ms is the move time left plus the whole bank (bot_service.proto): the
        # move's own time is what is left of it beyond the bank.
        move_ms=max(0, request.move_deadline_ms - request.time_bank_ms),
        bank_ms=request.time_bank_ms,
        deadline_ms=request.move_deadline_ms,
        received_at=received_at,
        kitty=cards(state.kitty_cards),  # in index order, as the referee sends it
    )


def play_decision(request_id: int, card: Card | str) -> bot_pb.PlayRequest:
    """The answer to a PLAY request."""
    return bot_pb.PlayRequest(
        decision=bot_pb.Decision(request_id=request_id, play_card=bot_pb.PlayCard(card=str(card)))
    )


def pass_decision(request_id: int, chosen: Sequence[Card | str]) -> bot_pb.PlayRequest:
    """The answer to a PASS request."""
    return bot_pb.PlayRequest(
        decision=bot_pb.Decision(
            request_id=request_id, pass_cards=bot_pb.PassCards(cards=[str(c) for c in chosen])
        )
    )


def event_of(message: ev_pb.Event, seat: int) -> Event | None:
    """The SDK value of one event (None for a kind this SDK does not know or a bot never gets)."""
    which = message.WhichOneof("kind")
    if which == "card_played":
        e = message.card_played
        return CardPlayed(e.hand_number, e.trick_number, e.seat, cards((e.card,))[0])
    if which == "trick_won":
        t = message.trick_won
        trick = Trick(t.trick_number, t.leader, cards(t.cards), t.winner)
        return TrickWon(t.hand_number, trick, t.points, cards(t.kitty_cards))
    if which == "game_started":
        g = message.game_started
        return GameStarted(
            game_id=g.game_id,
            seat=g.your_seat if g.HasField("your_seat") else seat,
            seat_names=tuple(g.seat_names),
            rules=rules_of(g.rules),
            move_ms=g.clock.move_time_ms,
            bank_ms=g.clock.time_bank_ms,
            max_hands=g.max_hands or None,
        )
    if which == "hand_started":
        h = message.hand_started
        try:
            direction: PassDirection | None = _direction(h.pass_direction)
        except ValueError:
            # A newer direction (v1 may add one): the hook still runs, as for other enums.
            direction = None
        return HandStarted(h.hand_number, h.dealer, direction, h.pass_count)
    if which == "cards_dealt":
        d = message.cards_dealt
        return CardsDealt(d.hand_number, cards(d.cards))
    if which == "cards_received":
        r = message.cards_received
        return CardsReceived(
            r.hand_number, r.from_seat, cards(r.cards), r.passed_to_seat, cards(r.passed_cards)
        )
    if which == "hand_ended":
        h2 = message.hand_ended
        return HandEnded(
            hand_number=h2.hand_number,
            points_taken=tuple(h2.points_taken),
            scores=tuple(h2.hand_scores),
            totals=tuple(h2.game_totals),
            moon=h2.moon_shooter if h2.HasField("moon_shooter") else None,
            sun=h2.sun,
        )
    if which == "game_ended":
        g2 = message.game_ended
        return GameEnded(
            game_id=g2.game_id,
            termination=_termination(g2.termination),
            seat_status=tuple(_termination(s) for s in g2.seat_status),
            totals=tuple(g2.game_totals),
            placings=tuple(g2.placings),
            hands_played=g2.hands_played,
            message=g2.message,
        )
    if which == "fault_notice":
        f = message.fault_notice
        return FaultNotice(
            kind=_fault_kind(f.kind),
            game_id=f.game_id,
            hand_number=f.hand_number,
            request_id=f.request_id,
            answer=f.your_answer,
            substitute=_lenient_cards(f.substitute_cards),
            message=f.message,
            faults=f.faults,
            faults_allowed=f.faults_allowed,
            forfeited=f.forfeited,
        )
    if which == "seat_faulted":
        s = message.seat_faulted
        return SeatFaulted(
            seat=s.seat,
            kind=_fault_kind(s.kind),
            hand_number=s.hand_number,
            faults=s.faults,
            faults_allowed=s.faults_allowed,
            forfeited=s.forfeited,
        )
    if which == "time_warning":
        w = message.time_warning
        return TimeWarning(w.time_bank_ms, w.message)
    return None


def _lenient_cards(codes: Iterable[str]) -> tuple[Card, ...]:
    # A fault notice must reach the author even if a card in it cannot be read.
    out = []
    for code in codes:
        try:
            out.append(cards((code,))[0])
        except CardParseError:
            continue
    return tuple(out)
