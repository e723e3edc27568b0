"""A bot that speaks raw hearts.v1 gRPC through the generated code, well or badly on purpose.

    python tests/bots/raw_bot.py --address 127.0.0.1:PORT --token TOKEN --mode MODE

Each mode is one way a bot can behave (the ``mode_*`` methods of :class:`Bot`, plus ``mute``:
no Hello at all, ``nohello``: a Decision before any Hello, ``goodbyefirst``: a Goodbye before
any Hello, ``laterkindfirst``: a PlayRequest of a kind a later revision might add (field 4)
before any Hello, ``huge``: a message over the size limit); the well-behaved ``good`` mode plays
the lowest legal card and passes its first cards.
Whatever happens, the last line on stdout is ``STATUS <code> <details>``, the status the referee
closed the stream with, so that a test can check refusals (a wrong token, a wrong version, a
flood); a Shutdown is printed as ``SHUTDOWN <reason>`` before it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb

PLAY_METHOD = "/hearts.v1.BotService/Play"
ALL_CARDS = [r + s for s in "CDHS" for r in "23456789TJQKA"]
FLOOD_MESSAGES = 5000
CRASH_AT_TRICK = 3
RECONNECT_AT_TRICK = 2
GARBAGE = b"\xff\xfe\x00garbage, not a PlayRequest\x07"
WRONG_ID_OFFSET = 1_000_000
HUGE_BYTES = 200_000
LATER_KIND = b'"\x02\x08\x01'
"""A PlayRequest holding only field 4, a message with a field 1 of 1: a kind this revision lacks."""
LATER_CHOICE = LATER_KIND
"""A Decision's field 4 (a message with field 1 = 1): a choice a later revision might add."""


def _serialize(message: bot_pb.PlayRequest | bytes) -> bytes:
    """Requests are protobuf messages, except the garbage mode's raw bytes."""
    return message if isinstance(message, bytes) else message.SerializeToString()


def lowest(cards: list[str]) -> str:
    """The lowest card by rank (the suit order breaks ties)."""
    return min(cards, key=lambda c: ("23456789TJQKA".index(c[0]), "CDHS".index(c[1])))


def good_answer(request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    """A legal answer: the lowest legal card, or the first cards of the hand for a pass."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision.pass_cards.cards.extend(list(request.legal_cards)[: request.pass_count])
    else:
        decision.play_card.card = lowest(list(request.legal_cards))
    return bot_pb.PlayRequest(decision=decision)


def play(request: bot_pb.DecisionRequest, card: str) -> bot_pb.PlayRequest:
    """An answer playing ``card`` (for a pass, ``card`` plus the first other cards)."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        rest = [c for c in request.hand if c != card][: request.pass_count - 1]
        decision.pass_cards.cards.extend([card, *rest])
    else:
        decision.play_card.card = card
    return bot_pb.PlayRequest(decision=decision)


class Bot:
    """One bot process: a stream to the referee and a mode deciding how it answers."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.mode = args.mode
        self.record = Path(args.record) if args.record else None
        self.reconnected = False
        self.muddled = 0
        """Play requests answered so far in the muddled mode."""
        self.held: bot_pb.DecisionRequest | None = None
        """The request the late mode holds back until the next one comes."""
        self.leaver: asyncio.Task[None] | None = None
        self.channel: grpc.aio.Channel | None = None
        self.call: grpc.aio.StreamStreamCall | None = None  # type: ignore[type-arg]

    def hello(self) -> bot_pb.PlayRequest:
        return bot_pb.PlayRequest(
            hello=bot_pb.Hello(
                bot_name=self.args.name,
                token=self.args.token,
                protocol_version=self.args.version,
                bot_version="test",
                decide_forced_moves=self.args.decide_forced,
                client_library="tests/bots/raw_bot.py",
            )
        )

    async def open(self) -> None:
        if self.args.tls_ca:
            cert = Path(self.args.tls_cert).read_bytes() if self.args.tls_cert else None
            key = Path(self.args.tls_key).read_bytes() if self.args.tls_key else None
            creds = grpc.ssl_channel_credentials(Path(self.args.tls_ca).read_bytes(), key, cert)
            self.channel = grpc.aio.secure_channel(
                self.args.address,
                creds,
                options=[("grpc.ssl_target_name_override", "localhost")],
            )
        else:
            self.channel = grpc.aio.insecure_channel(self.args.address)
        self.call = self.channel.stream_stream(
            PLAY_METHOD,
            request_serializer=_serialize,
            response_deserializer=bot_pb.PlayResponse.FromString,
        )()  # type: ignore[call-arg]
        if self.mode == "nohello":
            await self.send(good_answer(bot_pb.DecisionRequest(legal_cards=["2C"])))
        elif self.mode == "goodbyefirst":
            await self.send(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="never mind")))
        elif self.mode == "laterkindfirst":
            await self.send(LATER_KIND)
        elif self.mode != "mute":
            await self.call.write(self.hello())

    async def run(self) -> str:
        try:
            await self.open()
        except grpc.aio.AioRpcError as e:
            return f"{e.code().name} {e.details()}"
        if self.mode == "huge":
            await self.send(play(bot_pb.DecisionRequest(), "X" * HUGE_BYTES))
        if self.args.leave_when:
            self.leaver = asyncio.create_task(self.leave_when(Path(self.args.leave_when)))
        while True:
            assert self.call is not None
            try:
                response = await self.call.read()
            except grpc.aio.AioRpcError as e:
                return f"{e.code().name} {e.details()}"
            if response is grpc.aio.EOF:  # type: ignore[attr-defined]
                break
            assert isinstance(response, bot_pb.PlayResponse)
            if self.record is not None:
                with self.record.open("a") as out:
                    out.write(base64.b64encode(response.SerializeToString()).decode() + "\n")
            if response.HasField("request"):
                await self.answer(response.request)
            if response.HasField("shutdown"):
                reason = bot_pb.ShutdownReason.Name(response.shutdown.reason)
                print("SHUTDOWN", reason, flush=True)
                if not self.args.keep_open:
                    await self.call.done_writing()
                break
        assert self.call is not None
        code = await self.call.code()
        return f"{code.name} {await self.call.details()}"

    async def leave_when(self, signal_file: Path) -> None:
        """Say Goodbye once ``signal_file`` exists (a test's cue: no timing involved)."""
        while not signal_file.exists():
            await asyncio.sleep(0.01)
        await self.send(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="cue")))
        assert self.call is not None
        await self.call.done_writing()

    async def send(self, message: bot_pb.PlayRequest | bytes) -> None:
        """Write, ignoring a stream that has already ended (its status is read in run())."""
        assert self.call is not None
        try:
            await self.call.write(message)
        except (grpc.aio.AioRpcError, grpc.aio.UsageError) as e:
            print("WRITE-FAILED", type(e).__name__, flush=True)

    async def answer(self, request: bot_pb.DecisionRequest) -> None:
        handler: Callable[[bot_pb.DecisionRequest], Awaitable[None]] = getattr(
            self, "mode_" + self.mode, self.mode_good
        )
        await handler(request)

    # ---- modes ----------------------------------------------------------------------------

    async def mode_good(self, request: bot_pb.DecisionRequest) -> None:
        """Answer legally at once."""
        await self.send(good_answer(request))

    async def mode_silent(self, request: bot_pb.DecisionRequest) -> None:
        """Never answer (but keep the stream open and read it)."""

    async def mode_slow(self, request: bot_pb.DecisionRequest) -> None:
        """Answer legally, but only after --delay-ms (past the deadline)."""
        await asyncio.sleep(self.args.delay_ms / 1000)
        await self.send(good_answer(request))

    async def mode_late(self, request: bot_pb.DecisionRequest) -> None:
        """Hold every other request back until the next one comes, then answer the held one
        (late) before this one (at once). The referee asks a seat again only once it has given
        up on the open request, so the held answer is past its deadline whatever the machine's
        speed, and it reaches the referee before the answer to the request now open; a request
        held when its game ends is answered when the next game asks."""
        held, self.held = self.held, None
        if held is None:
            self.held = request
            return
        await self.send(good_answer(held))
        await self.send(good_answer(request))

    async def mode_crash(self, request: bot_pb.DecisionRequest) -> None:
        """Play legally, then die without a word in the middle of the first hand."""
        if request.kind == bot_pb.DECISION_KIND_PLAY and request.trick_number >= CRASH_AT_TRICK:
            os._exit(1)
        await self.send(good_answer(request))

    async def _dropped_once(self, request: bot_pb.DecisionRequest) -> bool:
        """Close the stream without answering, the first time a play request reaches
        RECONNECT_AT_TRICK; whether it did so now."""
        if (
            self.reconnected
            or request.kind != bot_pb.DECISION_KIND_PLAY
            or request.trick_number < RECONNECT_AT_TRICK
        ):
            return False
        self.reconnected = True
        assert self.call is not None and self.channel is not None
        self.call.cancel()
        await self.channel.close(None)
        return True

    async def mode_reconnect(self, request: bot_pb.DecisionRequest) -> None:
        """Drop the stream once mid-hand, come back with a new one, then play on."""
        if await self._dropped_once(request):
            await asyncio.sleep(self.args.delay_ms / 1000)
            await self.open()
            return
        await self.send(good_answer(request))

    async def mode_away(self, request: bot_pb.DecisionRequest) -> None:
        """Drop the stream once mid-hand without answering, and come back with a new one only
        once the --back-when file exists (a test's cue: the referee plays on meanwhile)."""
        if await self._dropped_once(request):
            cue = Path(self.args.back_when)
            while not cue.exists():
                await asyncio.sleep(0.01)
            await self.open()
            return
        await self.send(good_answer(request))

    async def mode_goodbye(self, request: bot_pb.DecisionRequest) -> None:
        """Play legally, then leave mid-hand with a Goodbye (and read the referee's reply)."""
        if request.kind == bot_pb.DECISION_KIND_PLAY and request.trick_number >= CRASH_AT_TRICK:
            await self.send(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="enough")))
            assert self.call is not None
            await self.call.done_writing()
            return
        await self.send(good_answer(request))

    async def mode_illegal(self, request: bot_pb.DecisionRequest) -> None:
        """Play a card it holds but may not play, whenever there is one."""
        illegal = [c for c in request.hand if c not in request.legal_cards]
        if request.kind == bot_pb.DECISION_KIND_PLAY and illegal:
            await self.send(play(request, illegal[0]))
        else:
            await self.send(good_answer(request))

    async def mode_notheld(self, request: bot_pb.DecisionRequest) -> None:
        """Play (and pass) a card it does not hold."""
        missing = next(c for c in ALL_CARDS if c not in request.hand)
        await self.send(play(request, missing))

    async def mode_emptypass(self, request: bot_pb.DecisionRequest) -> None:
        """Pass no card at all (a Decision with an empty pass), then play legally."""
        if request.kind == bot_pb.DECISION_KIND_PASS:
            decision = bot_pb.Decision(request_id=request.request_id)
            decision.pass_cards.SetInParent()
            await self.send(bot_pb.PlayRequest(decision=decision))
        else:
            await self.send(good_answer(request))

    async def mode_garbage(self, request: bot_pb.DecisionRequest) -> None:
        """Answer with bytes that are not a PlayRequest."""
        await self.send(GARBAGE)

    async def mode_wrongid(self, request: bot_pb.DecisionRequest) -> None:
        """Answer legally but echo a request id that was never sent."""
        answer = good_answer(request)
        answer.decision.request_id = request.request_id + WRONG_ID_OFFSET
        await self.send(answer)

    async def mode_muddled(self, request: bot_pb.DecisionRequest) -> None:
        """Answer plays in turn with: a pass; a Decision that chooses nothing; a second Hello,
        then the right answer (messages that carry the open request's id but no card, or no
        Decision at all: none of them may pass for a play)."""
        if request.kind != bot_pb.DECISION_KIND_PLAY:
            await self.send(good_answer(request))
            return
        turn = self.muddled % 3
        self.muddled += 1
        decision = bot_pb.Decision(request_id=request.request_id)
        if turn == 0:
            decision.pass_cards.cards.append(lowest(list(request.legal_cards)))
            await self.send(bot_pb.PlayRequest(decision=decision))
        elif turn == 1:
            await self.send(bot_pb.PlayRequest(decision=decision))
        else:
            await self.send(self.hello())
            await self.send(good_answer(request))

    async def mode_laterkind(self, request: bot_pb.DecisionRequest) -> None:
        """Send a PlayRequest of a kind a later revision might add, then the right answer."""
        await self.send(LATER_KIND)
        await self.send(good_answer(request))

    async def mode_laterchoice(self, request: bot_pb.DecisionRequest) -> None:
        """Answer with a Decision whose choice is one a later revision might add (field 4)."""
        decision = bot_pb.Decision.FromString(
            bot_pb.Decision(request_id=request.request_id).SerializeToString() + LATER_CHOICE
        )
        await self.send(bot_pb.PlayRequest(decision=decision))

    async def mode_hugeanswer(self, request: bot_pb.DecisionRequest) -> None:
        """Answer the first request with a message over the referee's size limit."""
        await self.send(play(request, "X" * HUGE_BYTES))

    async def mode_flood(self, request: bot_pb.DecisionRequest) -> None:
        """At the first request, send thousands of answers to a request that never was."""
        message = bot_pb.PlayRequest(
            decision=bot_pb.Decision(request_id=0, play_card=bot_pb.PlayCard(card="2C"))
        )
        assert self.call is not None
        for _ in range(FLOOD_MESSAGES):
            try:
                await self.call.write(message)
            except Exception:
                return


def main() -> None:
    """Run one bot until the referee ends the session; print the final status."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--address", default=os.environ.get("ARENA_ADDRESS", ""))
    parser.add_argument("--token", default=os.environ.get("ARENA_TOKEN", ""))
    parser.add_argument("--name", default=os.environ.get("ARENA_BOT_NAME", "raw"))
    parser.add_argument("--mode", default="good")
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--decide-forced", action="store_true")
    parser.add_argument("--record", default="")
    parser.add_argument(
        "--keep-open",
        action="store_true",
        help="after a Shutdown, never close this side of the stream (wait for the status)",
    )
    parser.add_argument(
        "--leave-when",
        default="",
        help="say Goodbye as soon as this file exists (whatever the bot is doing)",
    )
    parser.add_argument(
        "--back-when",
        default="",
        help="in the away mode, reconnect only once this file exists",
    )
    parser.add_argument("--tls-ca", default="")
    parser.add_argument("--tls-cert", default="")
    parser.add_argument("--tls-key", default="")
    args = parser.parse_args()
    status = asyncio.run(Bot(args).run())
    print("STATUS", status, flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
