"""A stored game told trick by trick: the deal, the passes, every card, every fault, the result."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from arena.cards import Card, Suit
from arena.engine import HandResult, settle_hand
from arena.errors import RulesError
from arena.rules import PRESETS, PassDirection, Rules, Settling
from arena.table import Fault, GameRecord, HandRecord

__all__ = ["replay_text"]


def _cards(codes: tuple[str, ...]) -> str:
    # Dealt hands read best grouped by suit, high to low, as a player holds them.
    cards = sorted((Card.parse(c) for c in codes), key=lambda c: (c.suit, c.rank), reverse=True)
    return " ".join(str(c) for c in cards) or "-"


def _rules_text(rules: Rules) -> str:
    """The rules as the preset they differ least from (the standard game on a tie) and the
    options, ``--rule`` style, that differ from it: black-lady with queen_penalty=10 was named
    as the standard game with two changes. A one-hand table's ``pass_cycle`` is its board's
    direction, so it is left out when looking for the preset."""
    chosen = "standard"
    fewest: int | None = None
    for name, candidate in PRESETS.items():  # the standard game first: it wins a tie
        try:
            sized = candidate.replace(players=rules.players)
        except RulesError:  # a preset that cannot be played at this table size
            continue
        count = len(_changes(rules.replace(pass_cycle=None), sized))
        if fewest is None or count < fewest:
            chosen, fewest = name, count
    changed = _changes(rules, PRESETS[chosen].replace(players=rules.players))
    given = f" with {' '.join(changed)}" if changed else ""
    return f"{chosen}{given}, {rules.players} players, target {rules.target}"


def _changes(rules: Rules, base: Rules) -> list[str]:
    """The options, ``--rule`` style, in which ``rules`` differ from ``base`` (the target is
    said apart)."""
    wanted = base.to_dict()
    return [
        f"{key}={_option_value(value)}"
        for key, value in rules.to_dict().items()
        if value != wanted[key] and key != "target"
    ]


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _balances(record: GameRecord) -> list[Fraction]:
    """Counters won (+) or paid (-) per seat over the game's finished hands, as the engine's
    :func:`arena.engine.settle_hand` settles them."""
    rules = record.spec.rules
    n = len(record.spec.seats)
    balances = [Fraction(0)] * n
    pool = Fraction(0)
    for hand in record.hands:
        if not hand.complete:
            continue
        hearts, tricks = [0] * n, [0] * n
        for number, trick in enumerate(hand.tricks):
            tricks[trick.winner] += 1
            won = [*trick.cards, *(hand.kitty if number == 0 else ())]
            hearts[trick.winner] += sum(Card.parse(c).suit is Suit.HEARTS for c in won)
        result = HandResult(
            hand.points, hand.points, tuple(hearts), tuple(tricks), hand.moon, hand.sun, None
        )
        won_now, pool = settle_hand(rules, result, pool)
        balances = [b + w for b, w in zip(balances, won_now, strict=True)]
    return balances


def _signed(value: Fraction) -> str:
    text = str(value) if value.denominator != 1 else str(value.numerator)
    return text if value < 0 else f"+{text}"


def _fault_line(fault: Fault) -> str:
    sent = f"sent {fault.sent!r}" if fault.sent else "sent nothing"
    verb = "passed" if fault.trick < 0 else "played"  # trick -1: the pass
    instead = f"; {verb} {' '.join(fault.substitute)} instead" if fault.substitute else ""
    return (
        f"    FAULT seat {fault.seat} {fault.bot}: {fault.kind.value}: {fault.detail} "
        f"({sent}{instead}, at {fault.at_ms:.0f} ms)"
    )


def _hand(record: GameRecord, hand: HandRecord) -> Iterator[str]:
    seats = record.spec.seats
    k = len(seats)
    width = max(len(s) for s in seats)

    def who(seat: int) -> str:
        return f"seat {seat} {seats[seat]:<{width}}"

    # Hands from 1, as its tricks and the page's replay count them (the record's from 0).
    yield f"hand {hand.number + 1}: dealer seat {hand.dealer}, pass {hand.pass_direction}"
    yield "  dealt:"
    for seat, cards in enumerate(hand.dealt):
        yield f"    {who(seat)}  {_cards(cards)}"
    if hand.kitty:
        yield f"    {'kitty':<{len(who(0))}}  {_cards(hand.kitty)} (to the first trick's winner)"
    faults = [f for f in record.faults if f.hand == hand.number]
    if any(hand.passes):
        offset = PassDirection(hand.pass_direction).offset(k)
        yield "  passes:"
        for seat, cards in enumerate(hand.passes):
            yield f"    {who(seat)}  -> seat {(seat + offset) % k}: {' '.join(cards) or '-'}"
    yield from (_fault_line(f) for f in faults if f.trick < 0)
    for number, trick in enumerate(hand.tricks):
        played = ", ".join(
            f"{seats[(trick.leader + i) % k]} {card}" for i, card in enumerate(trick.cards)
        )
        kitty = " and the kitty" if number == 0 and hand.kitty else ""
        yield f"  trick {number + 1:>2}: {played}  -> {seats[trick.winner]} takes it{kitty}"
        yield from (_fault_line(f) for f in faults if f.trick == number)
    yield from (_fault_line(f) for f in faults if f.trick >= len(hand.tricks))
    points = ", ".join(f"{seats[s]} {p}" for s, p in enumerate(hand.points))
    extra = ""
    if hand.moon is not None:
        extra = f"; {seats[hand.moon]} shot the {'sun' if hand.sun else 'moon'}"
    if not hand.complete:
        extra += "; the hand was not finished"
    yield f"  points: {points}{extra}"


def replay_text(record: GameRecord, game: int | None = None) -> Iterator[str]:
    """The lines of a game's replay, for a terminal."""
    spec = record.spec
    number = f" (game {game})" if game is not None else ""
    # The most the table deals ("3 hand(s)" read as the hands played, where a server's
    # `hands = 3` table can end sooner, at the target); the "ended:" line says how many were.
    if spec.hands is None:
        length = "a full game"
    else:
        length = "1 hand" if spec.hands == 1 else f"up to {spec.hands} hands"
    yield (
        f"table {spec.table_id}{number}: seed {spec.seed}, {length}, "
        f"move {spec.clocks.move_ms} ms, bank {spec.clocks.bank_ms} ms"
    )
    yield f"rules: {_rules_text(spec.rules)}"
    yield "seats: " + ", ".join(f"{s} {bot}" for s, bot in enumerate(spec.seats))
    for hand in record.hands:
        yield from _hand(record, hand)
    totals = ", ".join(
        f"{bot} {t} (place {p}{'' if st.value == 'normal' else ', ' + st.value})"
        for bot, t, p, st in zip(
            spec.seats, record.totals, record.placings, record.seat_status, strict=True
        )
    )
    yield f"result: {totals}"
    if spec.rules.settling is not Settling.POINTS:
        balances = _balances(record)
        counters = ", ".join(
            f"{bot} {_signed(b)}" for bot, b in zip(spec.seats, balances, strict=True)
        )
        yield f"settled ({spec.rules.settling.value}), the places follow it: {counters}"
    yield f"ended: {record.termination.value}: {record.reason}"
