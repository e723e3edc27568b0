"""The situations a bot is put in, in order, each a short scripted game with one point to prove.

Every scenario returns a one-line note when the bot passes it and raises
:class:`~arena.checkbot.driver.CheckFailedError` with the exact reason when it does not. The
deals are written out where the situation depends on them, and each scenario checks that the
situation it was written for really arises (else :class:`~arena.checkbot.driver.ScriptError`: a
bug of the checker, never blamed on the bot).

Each scenario's game is one hand, hand 0, as a real one-hand game is (a game that began at hand 3
had played three hands, whose totals and count the bot never saw). The standard rules pass left
in hand 0, so the scenarios that need a right or across pass or a hold hand play under the
standard rules with the pass cycle rotated to start there: a referee given those rules sends the
same. The time warning scenario alone shows the bot what no referee sends (see
:func:`time_warning`).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

import grpc

from arena.cards import CARDS, TWO_OF_CLUBS, Card, Suit, parse_cards
from arena.checkbot.driver import (
    AFTER_START,
    FIRST_DEALER,
    HAND_NUMBER,
    MS,
    Checker,
    CheckFailedError,
    NoStreamError,
    ScriptedGame,
    ScriptError,
    cannot_start,
    show,
    suit_word,
)
from arena.checkbot.server import ScriptedStream, StreamEnded
from arena.engine import Hand, Phase
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.referee import wire
from arena.referee.fallback import fallback_play
from arena.rules import PassDirection, Rules
from arena.table import DEFAULT_MAX_FAULTS, FaultKind

__all__ = ["SCENARIOS", "Scenario", "await_return", "drop", "scripted_hand"]

RULES = Rules()


def first_passing(direction: PassDirection, rules: Rules = RULES) -> Rules:
    """``rules`` with its pass cycle rotated so that hand 0, the scripted hand, passes
    ``direction`` (``rules`` itself if it does already)."""
    cycle = rules.cycle
    if direction not in cycle:
        raise ScriptError(f"no {direction.value} pass in the cycle {[d.value for d in cycle]}")
    start = cycle.index(direction)
    return replace(rules, pass_cycle=cycle[start:] + cycle[:start])


HOLD_RULES = first_passing(PassDirection.HOLD)
"""The standard rules with the cycle hold, left, right, across: hand 0 is a hold hand."""
HOLD_DEAL = 3
"""The deal number whose cards the hold scenarios use (they were hand 3 of the standard cycle)."""
LOW_BANK_MS = 300
"""The time bank left in the time-warning scenario."""
FAULTS_ALLOWED = DEFAULT_MAX_FAULTS
"""The faults allowed, as the fault scenario's notices tell it (the default policy's)."""


def first_hand(rules: Rules, seed: int, deal: int = 0) -> Hand:
    """Hand 0 of a game under ``rules``, as the referee deals it (by seat 0, passing
    ``rules.pass_cycle[0]``), holding the cards the engine deals from ``seed`` for its hand
    number ``deal``: each scenario keeps the cards it was written with when it was a later hand."""
    cards = Hand.deal(rules, seed, hand_number=deal)
    return Hand.from_hands(
        rules,
        [cards.dealt(s) for s in range(rules.players)],
        dealer=FIRST_DEALER,
        pass_direction=rules.pass_direction(HAND_NUMBER),
    )


@dataclass(frozen=True)
class Scenario:
    """One situation: its name (as printed) and the coroutine that drives it."""

    name: str
    """Short name, printed on the PASS/FAIL line and accepted by ``--only``."""
    run: Callable[[Checker], Awaitable[str]]
    """Drives the bot; returns the note printed on PASS."""
    uses_game: bool = True
    """Whether it plays a game on the bot's main session (so a failure interrupts that game)."""
    description: str = ""
    """What it checks, in one line (``--list``); the first line of ``run``'s docstring if empty."""

    @property
    def about(self) -> str:
        """What the scenario checks, in one line."""
        doc = (self.run.__doc__ or "").strip().splitlines()
        return self.description or (doc[0] if doc else "")


def scripted_hand(fixed: Mapping[int, str], *, seed: int, rules: Rules = HOLD_RULES) -> Hand:
    """Hand 0 of a game under ``rules`` (a hold hand by default), in which each seat in ``fixed``
    holds those cards (and more, dealt by ``seed``, up to a full hand); the other seats are dealt
    the rest. Seat 0 deals, as the referee's first hand."""
    holdings = {seat: parse_cards(text) for seat, text in fixed.items()}
    taken = {c for cards in holdings.values() for c in cards}
    rest = [c for c in CARDS if c not in taken]
    random.Random(seed).shuffle(rest)
    hands: list[list[Card]] = []
    for seat in range(rules.players):
        own = holdings.get(seat, [])
        missing = rules.hand_size - len(own)
        hands.append(sorted(own + rest[:missing]))
        rest = rest[missing:]
    return Hand.from_hands(
        rules, hands, dealer=FIRST_DEALER, pass_direction=rules.pass_direction(HAND_NUMBER)
    )


def expect(condition: bool, what: str) -> None:
    """Raise :class:`ScriptError` unless the scripted situation holds."""
    if not condition:
        raise ScriptError(f"the scripted situation did not arise: {what}")


async def play_game(
    checker: Checker, game: ScriptedGame, body: Callable[[], Awaitable[str]]
) -> str:
    """Deal ``game``, run ``body``, and always end the game (interrupted if it stopped early)."""
    # The bot's Hello says whether it decides its forced moves, which the script must know
    # before it plays any card: run alone (--only), a check played them for a bot that had
    # not connected yet, as for one that leaves them to the referee.
    await checker.connect()
    game.deal()
    try:
        note = await body()
    except Exception:
        await end_game(checker, game)
        raise
    except BaseException:
        game.end()  # the scenario's time is up, or the user stops the check: no waiting
        raise
    await end_game(checker, game)
    twice = await checker.second_answers()
    if twice:
        raise CheckFailedError(
            f"answered request_id {twice[0]} a second time: send exactly one Decision per "
            "DecisionRequest; the referee counts a second answer as a fault"
        )
    return note


async def end_game(checker: Checker, game: ScriptedGame) -> None:
    """End ``game`` and let the bot finish with it before the check is judged."""
    since = checker.log_size()
    if game.end():
        await checker.settle(game.game_id, since)


# ---- the scenarios -------------------------------------------------------------------------


async def handshake(checker: Checker) -> str:
    """The bot connects and says a valid Hello."""
    await checker.connect()
    hello = checker.hello
    assert hello is not None
    parts = [f"bot_version {hello.bot_version!r}" if hello.bot_version else "no bot_version"]
    if hello.client_library:
        parts.append(f"client {hello.client_library!r}")
    parts.append("decides forced moves" if hello.decide_forced_moves else "forced moves left to us")
    return f"Hello v{hello.protocol_version} as {hello.bot_name!r} ({', '.join(parts)})"


def pass_scenario(direction: PassDirection, deal: int, seat: int, seed: int) -> Scenario:
    """Pass in ``direction``, then play the first card from the hand as it is after the pass
    (the cards of ``seed``'s deal number ``deal``, in hand 0 of a game whose cycle starts with
    ``direction``)."""

    async def run(checker: Checker) -> str:
        hand = first_hand(first_passing(direction), seed, deal)
        expect(hand.pass_direction is direction, f"hand 0 passes {direction.value}")
        game = ScriptedGame(checker, f"check-pass-{direction.value}", hand, seat)

        async def body() -> str:
            passed = await game.pass_phase()
            assert passed is not None
            received = hand.received(seat) or []
            game.advance()
            played = ""
            if game.bot_must_decide():
                played = f", then played {await game.bot_play()}"
            to = hand.pass_target(seat)
            return f"passed {show(passed)} to seat {to}, received {show(received)}{played}"

        return await play_game(checker, game, body)

    return Scenario(
        f"pass {direction.value}",
        run,
        description=f"Asked to pass {direction.value}, the bot gives 3 distinct cards it holds; "
        "then it plays a legal card from the hand it has after the pass.",
    )


async def hold(checker: Checker) -> str:
    """A hold hand: no pass request; the first question is a play."""
    hand = first_hand(HOLD_RULES, seed=11, deal=HOLD_DEAL)
    expect(hand.phase is Phase.PLAY, "a hold hand starts with the play")
    game = ScriptedGame(checker, "check-hold", hand, 1)

    async def body() -> str:
        game.advance()
        card = await game.bot_play()
        return f"no pass on a hold hand; played {card} at trick {game.own_plays[card]}"

    return await play_game(checker, game, body)


async def first_lead(checker: Checker) -> str:
    """The holder of the 2C leads it to the first trick (played for the bot if forced)."""
    hand = scripted_hand({0: "2C 7C JC 4D 9D KD 3H 8H QH 5S 9S JS AS"}, seed=21)
    game = ScriptedGame(checker, "check-first-lead", hand, 0)

    async def body() -> str:
        expect(hand.to_move == 0 and hand.legal_plays() == [TWO_OF_CLUBS], "seat 0 must lead 2C")
        if checker.decide_forced:
            card = await game.bot_play()
            return f"led {card} to the first trick when asked"
        game.advance()
        expect(TWO_OF_CLUBS in game.own_plays, "the 2C was played for the bot")
        if game.bot_must_decide():
            trick = hand.trick_number
            card = await game.bot_play()
            return (
                "the 2C was played for it (a forced move, which it left to the referee); "
                f"then it played {card} at trick {trick}"
            )
        return "the 2C was played for it (a forced move, which it left to the referee)"

    return await play_game(checker, game, body)


async def first_trick_penalty(checker: Checker) -> str:
    """Void in clubs on the first trick, holding hearts and the QS: no penalty card."""
    bot = 2
    hand = scripted_hand({bot: "4D 8D 2H 3H 5H 6H 9H JH KH AH 3S 7S QS"}, seed=22)
    game = ScriptedGame(checker, "check-first-trick", hand, bot)

    async def body() -> str:
        game.advance()
        trick = hand.current_trick
        expect(
            hand.to_move == bot
            and hand.trick_number == 0
            and trick is not None
            and trick.lead_suit is Suit.CLUBS,
            "the bot discards to the club lead of the first trick",
        )
        card = await game.bot_play()
        return f"void in clubs on the first trick, discarded {card} (no heart, no QS)"

    return await play_game(checker, game, body)


async def following_suit(checker: Checker) -> str:
    """A club is led, then a diamond: holding both suits, the bot must follow each.

    At the diamond lead the bot still holds a club, the first card of its sorted hand: a bot
    playing that instead of one of legal_cards passed a club lead alone.
    """
    bot = 1
    # Seat 2 takes the first trick with its only club, the AC, and leads its lowest diamond.
    hand = scripted_hand(
        {
            0: "2C 3C 4C 2D 4D 5D 3H 4H 5H 6H 2S 3S 5S",
            bot: "5C 9C 3D 6D TD 2H 7H 9H KH 4S 8S TS KS",
            2: "AC 7D 8D 9D JD 8H TH JH 7S 9S JS QS AS",
        },
        seed=23,
    )
    game = ScriptedGame(checker, "check-follow", hand, bot)

    async def to_lead(suit: Suit, number: int) -> tuple[str, Card]:
        game.advance()
        trick = hand.current_trick
        expect(
            hand.to_move == bot
            and hand.trick_number == number
            and trick is not None
            and trick.lead_suit is suit,
            f"the bot plays to a {suit_word(suit)} lead at trick {number}",
        )
        assert trick is not None
        shown = show(trick.cards)
        return shown, await game.bot_play()

    async def body() -> str:
        clubs, first = await to_lead(Suit.CLUBS, 0)
        diamonds, second = await to_lead(Suit.DIAMONDS, 1)
        return (
            f"followed the {suit_word(Suit.CLUBS)} lead ({clubs}) with {first}, and the "
            f"{suit_word(Suit.DIAMONDS)} lead at trick 1 ({diamonds}) with {second}"
        )

    return await play_game(checker, game, body)


async def void(checker: Checker) -> str:
    """Void in the suit led after the first trick: any card may go, points included."""
    bot = 3
    # Seat 2 takes the first trick with the 8C and leads the 9C; the bot has no club, and its
    # only other non-penalty card (7D) went on the first trick.
    hand = scripted_hand(
        {
            0: "2C 3C 4C",
            1: "5C 6C 7C",
            2: "8C 9C TC JC QC KC AC",
            bot: "7D QS 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
        },
        seed=24,
    )
    game = ScriptedGame(checker, "check-void", hand, bot)

    async def body() -> str:
        game.advance()
        if hand.trick_number == 0:  # the bot asked to be asked about its forced 7D
            await game.bot_play()
            game.advance()
        trick = hand.current_trick
        held = hand.hand(bot)
        expect(
            hand.to_move == bot
            and hand.trick_number == 1
            and trick is not None
            and trick.lead_suit is not None
            and all(c.suit is not trick.lead_suit for c in held),
            "the bot is void in the suit led at trick 1",
        )
        assert trick is not None and trick.lead_suit is not None
        card = await game.bot_play()
        return f"void in {trick.lead_suit.name.lower()} at trick 1, discarded {card}"

    return await play_game(checker, game, body)


async def hearts_not_broken(checker: Checker) -> str:
    """The bot leads with hearts unbroken, holding hearts and other suits: no heart."""
    bot = 1
    hand = scripted_hand({bot: "AC KD AD 2H 3H 4H 5H 6H 7H 8H 9S KS AS"}, seed=25)
    game = ScriptedGame(checker, "check-hearts", hand, bot)

    async def body() -> str:
        game.advance()
        if hand.trick_number == 0:  # the bot was asked about its forced AC
            await game.bot_play()
            game.advance()
        trick = hand.current_trick
        expect(
            hand.to_move == bot
            and hand.trick_number == 1
            and trick is not None
            and not trick.cards
            and not hand.hearts_broken,
            "the bot leads trick 1 with hearts unbroken",
        )
        card = await game.bot_play()
        return f"led {card} at trick 1 with hearts unbroken, holding hearts"

    return await play_game(checker, game, body)


async def time_warning(checker: Checker) -> str:
    """A TimeWarning arrives with a request and little bank left: the bot still answers in time.

    The one scenario that deliberately sends what no referee would: the bot's first request of
    the game says :data:`LOW_BANK_MS` of bank left, though it spent none (and with ``--bank-ms``
    under that, more than GameStarted's ``clock.time_bank_ms``). A referee warns only once a
    bot's own slow answers have drawn its bank below the warning threshold (1 s by default), and
    never in a game whose bank starts at or below it; a bot cannot be made slow, so the low bank
    is given instead.
    """
    hand = first_hand(HOLD_RULES, seed=12, deal=HOLD_DEAL)
    game = ScriptedGame(checker, "check-time", hand, 2, bank_ms=LOW_BANK_MS)

    async def body() -> str:
        game.advance()
        game.pending.append(
            ev_pb.Event(
                time_warning=ev_pb.TimeWarning(
                    time_bank_ms=LOW_BANK_MS,
                    message=f"{LOW_BANK_MS} ms of time bank left for this game",
                )
            )
        )
        deadline = int(game.clocks.move_ms + game.bank_ms)
        card = await game.bot_play()
        return (
            f"after a TimeWarning ({LOW_BANK_MS} ms of bank left) played {card} in "
            f"{game.slowest_ms:.0f} ms (deadline {deadline} ms)"
        )

    return await play_game(checker, game, body)


async def fault_notices(checker: Checker) -> str:
    """Told of another seat's fault, then of its own while it was away, the bot plays on.

    A game whose clocks are the check's without a time bank (so that the bot's deadline is the
    move time alone). Seat 1's next card comes after a SeatFaulted, as the referee sends one when
    the fallback plays for a seat. At the bot's second decision the checker drops its stream, as
    the reconnect check does, and welcomes it back only once the move time has run out: as a
    referee does for a seat away when it has to decide, the fallback plays the seat's lowest
    legal card with a DISCONNECT fault, and the returning bot gets the game's story again, the
    cards played while it was away, the FaultNotice naming that card, and its next request. It
    must answer that in time and legally, from the hand the request shows.
    """
    bot = 2
    hand = first_hand(HOLD_RULES, seed=14, deal=HOLD_DEAL)
    clocks = replace(checker.options.clocks, bank_ms=0)
    game = ScriptedGame(checker, "check-fault", hand, bot, clocks=clocks)
    told_other: list[int] = []

    def to_the_bot() -> None:
        """Play the other seats to the bot's next decision, seat 1 faulting once."""
        while hand.phase is Phase.PLAY and not game.bot_must_decide():
            seat = hand.to_move
            assert seat is not None
            if seat == 1 and not told_other:
                told_other.append(seat)
                game.pending.append(_seat_faulted(game, seat))
            game.apply(seat, fallback_play(hand.legal_plays()))
        expect(game.bot_must_decide(), "the bot has a play to decide")

    async def body() -> str:
        to_the_bot()
        first = await game.bot_play()
        to_the_bot()
        loop = asyncio.get_running_loop()
        due = loop.time()
        drop(checker)
        new = await await_return(checker)
        await asyncio.sleep(max(0.0, due + clocks.move_ms / MS - loop.time()))
        substitute = fallback_play(hand.legal_plays())
        game.pending.append(_fault_notice(game, substitute))
        game.apply(bot, substitute)
        to_the_bot()
        expect(bool(told_other), "seat 1 played with a SeatFaulted before the bot's last play")
        request = game.request("play")
        checker.welcome(
            new, resumed=True, events=game.replay() + game.take_pending(), request=request
        )
        what = "the play request sent with the FaultNotice"
        decision, elapsed = await checker.answer(new, request, what)
        game.charge(elapsed)
        card = game.judge_play(decision, f"trick {hand.trick_number}, after its fault")
        game.apply(bot, card)
        return (
            f"played {first}; told of seat 1's fault, then, away past its move time, of its own "
            f"({substitute} played in its place), played {card}"
        )

    return await play_game(checker, game, body)


def _seat_faulted(game: ScriptedGame, seat: int) -> ev_pb.Event:
    """The SeatFaulted a referee sends when ``seat`` misses its move (its first fault)."""
    return ev_pb.Event(
        seat_faulted=ev_pb.SeatFaulted(
            seat=seat,
            kind=wire.fault_kind(FaultKind.TIMEOUT),
            hand_number=game.number,
            faults=1,
            faults_allowed=FAULTS_ALLOWED,
        )
    )


def _fault_notice(game: ScriptedGame, substitute: Card) -> ev_pb.Event:
    """The FaultNotice a referee sends a bot that was away when its seat had to play (its
    first fault; no request was open, so its id is 0)."""
    return ev_pb.Event(
        fault_notice=ev_pb.FaultNotice(
            kind=wire.fault_kind(FaultKind.DISCONNECT),
            game_id=game.game_id,
            hand_number=game.number,
            substitute_cards=[str(substitute)],
            message=(
                "not connected when the seat had to decide, and not back before the deadline; "
                f"played instead: {substitute}"
            ),
            faults=1,
            faults_allowed=FAULTS_ALLOWED,
        )
    )


async def reconnect(checker: Checker) -> str:
    """The stream drops mid-hand: the bot reconnects with its token, resumes, plays on."""
    bot = 2
    hand = first_hand(HOLD_RULES, seed=13, deal=HOLD_DEAL)
    game = ScriptedGame(checker, "check-reconnect", hand, bot)

    async def body() -> str:
        game.advance()
        first = await game.bot_play()
        broken = checker.session_id
        loop = asyncio.get_running_loop()
        dropped = loop.time()
        extra = drop(checker)
        game.advance()
        expect(game.bot_must_decide(), "the bot has a decision after the drop")
        new = await await_return(checker)
        back_ms = (loop.time() - dropped) * MS
        named, wrong = _resume_note(checker, broken)
        request = game.request("play")
        events = game.replay() + game.take_pending()
        # Welcomed and played on even with a wrong resume_session_id (the failure is said after):
        # a stream left without its Welcome held the bot, which then opened none for the next
        # check, and that failed too, blaming the bot for a stream the checker had not answered.
        checker.welcome(new, resumed=True, events=events, request=request)
        decision, elapsed = await checker.answer(new, request, "the play request sent on resume")
        game.charge(elapsed)
        card = game.judge_play(decision, f"trick {hand.trick_number}, after the reconnect")
        game.apply(bot, card)
        if wrong:
            raise CheckFailedError(wrong)
        beside = (
            f"; the {extra} other stream(s) it had opened beside its session were set aside"
            if extra
            else ""
        )
        return (
            f"played {first}, was dropped, reconnected in {back_ms:.0f} ms ({named}), resumed "
            f"and played {card}{beside}"
        )

    return await play_game(checker, game, body)


def drop(checker: Checker) -> int:
    """Drop the bot's stream on purpose (UNAVAILABLE), as a broken connection would be; the
    other streams it had opened beside its session, set aside (never taken for its return)."""
    stream = checker.stream
    assert stream is not None
    extra = checker.set_aside_extra()  # opened before the drop: not its reconnect
    stream.close(
        grpc.StatusCode.UNAVAILABLE,
        "check-bot drops this stream on purpose: reconnect with the same token",
    )
    checker.stream = None
    return extra


async def await_return(checker: Checker) -> ScriptedStream:
    """The stream the bot opens after :func:`drop`, within the reconnect grace (its Hello read,
    not yet welcomed); else :class:`CheckFailedError`, the bot stopped if it is still alive."""
    try:
        return await checker.accept(checker.options.grace_ms / MS, "after the drop")
    except NoStreamError:
        failure = CheckFailedError(
            f"did not reconnect within Welcome.reconnect_grace_ms ({checker.options.grace_ms}"
            f" ms) after the checker dropped its stream with UNAVAILABLE{checker.exit_note()}"
        )
        if checker.process is not None and checker.process.returncode is None:
            # Alive but not back: the next check takes a fresh process, rather than wait
            # --start-timeout for a stream from this one and fail for the same reason.
            await checker.process.stop()
        raise failure from None


def _resume_note(checker: Checker, broken: str) -> tuple[str, str]:
    """What the reconnect's Hello said of the broken session, and why that fails the check
    ("" if it does not: a wrong name fails it)."""
    assert checker.hello is not None
    named = checker.hello.resume_session_id
    if named == broken:
        return "naming the broken session in Hello.resume_session_id", ""
    if named:
        return "", (
            f"the reconnect's Hello.resume_session_id is {named!r}, not the session_id of the "
            f"Welcome of the stream that broke ({broken!r}): the referee ignores it"
        )
    # Optional in hearts.v1, so not a failure: said, since it matters on a half-open connection.
    return (
        "without Hello.resume_session_id: set it to the last Welcome.session_id so that the "
        "referee gives the seat back at once even before it notices the broken connection"
    ), ""


async def whole_hand(checker: Checker) -> str:
    """A whole hand from the pass to the score, every answer judged."""
    bot = 3
    hand = first_hand(RULES, seed=14)
    game = ScriptedGame(checker, "check-whole-hand", hand, bot)

    async def body() -> str:
        await game.pass_phase()
        await game.play_out()
        points = hand.points_taken()[bot]
        return (
            f"{game.decisions} decisions over 13 tricks, slowest {game.slowest_ms:.0f} ms; "
            f"took {points} points"
        )

    return await play_game(checker, game, body)


async def shutdown(checker: Checker) -> str:
    """Told there are no more games, the bot closes its stream and exits with code 0."""
    stream = await checker.connect()
    process = checker.process
    assert process is not None
    loop = asyncio.get_running_loop()
    checker.set_aside_extra()  # opened before the Shutdown: not a new stream after it
    shutdown = bot_pb.PlayResponse(
        shutdown=bot_pb.Shutdown(
            reason=bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES,
            message="arena check-bot: all checks done",
            may_reconnect=False,
        )
    )
    # Every stream of the bot's is told, as the referee tells each of its sessions.
    for told in (stream, *checker.extra_streams):
        told.send(shutdown)
        told.close()
    checker.stream = None
    sent = loop.time()
    code = await process.wait(checker.options.exit_timeout_s)
    late = checker.server.pending_streams()
    for extra in late:
        extra.close(grpc.StatusCode.UNAVAILABLE, "no more games")
    if code is None:
        await checker.stop()  # so that it cannot take the next scenario's streams
        again = f" (it opened {len(late)} new stream(s))" if late else ""
        raise CheckFailedError(
            f"still running {checker.options.exit_timeout_s:g} s after "
            f"Shutdown(SHUTDOWN_REASON_NO_MORE_GAMES){again}: exit when there are no more games"
        )
    if code != 0:
        raise CheckFailedError(
            f"exited with code {code} after a clean Shutdown(SHUTDOWN_REASON_NO_MORE_GAMES); "
            f"expected 0{checker.exit_note()}"
        )
    return f"exited with code 0, {(loop.time() - sent) * MS:.0f} ms after Shutdown(NO_MORE_GAMES)"


async def refused_token(checker: Checker) -> str:
    """A bad token is refused with UNAUTHENTICATED: the bot stops (non-zero), no retry loop."""
    await checker.stop()  # only the refused process may connect from now on
    for stale in checker.server.pending_streams():
        stale.close(grpc.StatusCode.UNAVAILABLE, "the check is over")
    bad = "wrong-" + secrets.token_hex(8)
    process = checker.new_process(bad)
    await process.start()
    try:
        timeout_s = checker.options.start_timeout_s
        stream = await checker.next_stream_or_exit(timeout_s, process)
        if stream is None:
            failure = checker.no_stream(process, timeout_s, AFTER_START)
            if checker.starts == 0 and process.returncode is not None:
                raise cannot_start(failure)  # the only process run (--only): it never connected
            raise failure
        first = await stream.receive(checker.options.clocks.handshake_ms / MS)
        if first is None or isinstance(first.item, StreamEnded):
            raise CheckFailedError("opened a stream but sent no Hello")
        refusal = (
            "unknown token: ask the organiser for a valid one (check-bot refuses it on purpose)"
        )
        stream.close(grpc.StatusCode.UNAUTHENTICATED, refusal)
        loop = asyncio.get_running_loop()
        refused_at = loop.time()
        until = refused_at + checker.options.exit_timeout_s
        retries = 0
        code = None
        while code is None and loop.time() < until:
            # Refuse every retry the same way, until the bot exits or the time is up.
            waiter = asyncio.ensure_future(process.wait(until - loop.time()))
            arrival = asyncio.ensure_future(checker.server.next_stream(until - loop.time()))
            done, pending = await asyncio.wait(
                {waiter, arrival}, return_when=asyncio.FIRST_COMPLETED
            )
            for future in pending:
                future.cancel()
            if arrival in done and arrival.result() is not None:
                retry = arrival.result()
                assert retry is not None
                retries += 1
                retry.close(grpc.StatusCode.UNAUTHENTICATED, refusal)
            code = process.returncode
        if code is None:
            # What it printed tells a bot that never saw the refusal from one that cannot exit.
            tail = process.tail()
            said = f"; its last output: {tail}" if tail else "; it printed nothing"
            raise CheckFailedError(
                f"still running {checker.options.exit_timeout_s:g} s after UNAUTHENTICATED "
                f"(it tried again {retries} times{said}): a refused token must end the bot, "
                "retrying cannot help"
            )
        if code == 0:
            raise CheckFailedError(
                "exited with code 0 after UNAUTHENTICATED; exit non-zero so that whoever "
                "runs it sees the failure"
            )
        took = (loop.time() - refused_at) * MS
        tail = process.tail(1)
        said = f"; its last line: {tail}" if tail else ""
        return f"exited with code {code}, {took:.0f} ms after UNAUTHENTICATED{said}"
    finally:
        await process.stop()


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("handshake", handshake, uses_game=False),
    pass_scenario(PassDirection.LEFT, 0, 0, seed=1),
    pass_scenario(PassDirection.RIGHT, 1, 1, seed=2),
    pass_scenario(PassDirection.ACROSS, 2, 2, seed=3),
    Scenario("hold", hold),
    Scenario("first trick lead", first_lead),
    Scenario("first trick penalty", first_trick_penalty),
    Scenario("following suit", following_suit),
    Scenario("void", void),
    Scenario("hearts not broken", hearts_not_broken),
    Scenario("time warning", time_warning),
    Scenario("fault notices", fault_notices),
    Scenario("reconnect", reconnect),
    Scenario("whole hand", whole_hand),
    Scenario("shutdown", shutdown, uses_game=False),
    Scenario("refused token", refused_token, uses_game=False),
)
"""Every scenario, in the order they run."""
