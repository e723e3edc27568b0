"""A raw hearts.v1 bot for the resume and late-reply tests: it can stall half-open, name an
earlier session to take its place, or keep answering after its seat is forfeited.

    python tests/bots/resume_bot.py --address 127.0.0.1:PORT --token TOKEN --mode MODE

Modes (every one plays the lowest legal card and passes its first cards when it does answer):

* ``good``: answers every request at once.
* ``stall``: at the first play request of trick ``--stall-at`` or later, prints ``STALLED <id>``
  and stops itself with SIGSTOP without answering: its connection stays open and silent, as a
  half-open one does, until the test sends SIGCONT (it then answers that request, late).
* ``forfeit-late``: answers its session's first request (a pass) with a Decision echoing a wrong
  request id (one fault: strict mode forfeits the seat), then at once with the right answer (late:
  the seat is forfeited) and with one more wrong id; when that game ends, it sends the right
  answer once more (between games); it answers every later request at once.
* ``forfeit-burst``: answers its session's first request with a wrong request id (strict mode
  forfeits the seat), then sends the right answer :data:`BURST` times at once (each late).
* ``echo-earlier``: answers every request at once; at the first request of its second game it
  first sends its last answer of the first game again (as one still in flight would arrive).

``--resume ID`` sets Hello.resume_session_id. It prints ``WELCOME <session_id> <resumed>`` for the
Welcome, with ``--show-requests`` ``REQUEST <id> <move_deadline_ms> <time_bank_ms>`` for each
request, ``SHUTDOWN <reason>`` for a Shutdown, and last ``STATUS <code>`` with the status the
referee closed the stream with.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb

PLAY_METHOD = "/hearts.v1.BotService/Play"
WRONG_ID_OFFSET = 1_000_000
BURST = 600


def lowest(cards: list[str]) -> str:
    """The lowest card by rank (the suit order breaks ties)."""
    return min(cards, key=lambda c: ("23456789TJQKA".index(c[0]), "CDHS".index(c[1])))


def answer(request: bot_pb.DecisionRequest, request_id: int | None = None) -> bot_pb.PlayRequest:
    """A legal answer to ``request``, echoing ``request_id`` (default: the request's own)."""
    rid = request.request_id if request_id is None else request_id
    decision = bot_pb.Decision(request_id=rid)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision.pass_cards.cards.extend(list(request.legal_cards)[: request.pass_count])
    else:
        decision.play_card.card = lowest(list(request.legal_cards))
    return bot_pb.PlayRequest(decision=decision)


async def play(args: argparse.Namespace) -> str:
    """One session, to its end; the status it ended with."""
    async with grpc.aio.insecure_channel(args.address) as channel:
        call = channel.stream_stream(
            PLAY_METHOD,
            request_serializer=bot_pb.PlayRequest.SerializeToString,
            response_deserializer=bot_pb.PlayResponse.FromString,
        )()  # type: ignore[call-arg]
        await call.write(
            bot_pb.PlayRequest(
                hello=bot_pb.Hello(
                    bot_name=args.name,
                    token=args.token,
                    protocol_version=1,
                    client_library="tests/bots/resume_bot.py",
                    resume_session_id=args.resume,
                )
            )
        )
        stalled = False
        first: bot_pb.DecisionRequest | None = None
        """The forfeit-late mode's first request, answered late again after its game."""
        games_ended = 0
        last: bot_pb.DecisionRequest | None = None
        """The echo-earlier mode's last request answered in its first game."""
        while True:
            try:
                response = await call.read()
            except grpc.aio.AioRpcError as e:
                return f"{e.code().name} {e.details()}"
            if response is grpc.aio.EOF:  # type: ignore[attr-defined]
                break
            assert isinstance(response, bot_pb.PlayResponse)
            if response.HasField("welcome"):
                w = response.welcome
                print("WELCOME", w.session_id, w.resumed, flush=True)
            if any(e.HasField("game_ended") for e in response.events):
                games_ended += 1
                if first is not None and games_ended == 1:
                    await send(call, answer(first))
            if response.HasField("request"):
                request = response.request
                if args.show_requests:
                    print(
                        "REQUEST",
                        request.request_id,
                        request.move_deadline_ms,
                        request.time_bank_ms,
                        flush=True,
                    )
                if (
                    args.mode == "stall"
                    and not stalled
                    and request.kind == bot_pb.DECISION_KIND_PLAY
                    and request.trick_number >= args.stall_at
                ):
                    stalled = True
                    print("STALLED", request.request_id, flush=True)
                    os.kill(os.getpid(), signal.SIGSTOP)
                    # Continued: the answer is long past its deadline, on a replaced session.
                    await send(call, answer(request))
                elif args.mode == "forfeit-late" and first is None:
                    first = request
                    await send(call, answer(request, request.request_id + WRONG_ID_OFFSET))
                    await send(call, answer(request))
                    await send(call, answer(request, request.request_id + 2 * WRONG_ID_OFFSET))
                elif args.mode == "forfeit-burst" and first is None:
                    first = request
                    await send(call, answer(request, request.request_id + WRONG_ID_OFFSET))
                    for _ in range(BURST):
                        await send(call, answer(request))
                elif args.mode == "echo-earlier" and games_ended == 1 and last is not None:
                    await send(call, answer(last))
                    last = None
                    await send(call, answer(request))
                else:
                    if games_ended == 0:
                        last = request
                    await send(call, answer(request))
            if response.HasField("shutdown"):
                reason = bot_pb.ShutdownReason.Name(response.shutdown.reason)
                print("SHUTDOWN", reason, flush=True)
                await call.done_writing()
                break
        code = await call.code()
        return f"{code.name} {await call.details()}"


async def send(call: grpc.aio.StreamStreamCall, message: bot_pb.PlayRequest) -> None:  # type: ignore[type-arg]
    """Write, ignoring a stream that has ended already (its status is read at the end)."""
    try:
        await call.write(message)
    except (grpc.aio.AioRpcError, grpc.aio.UsageError) as e:
        print("WRITE-FAILED", type(e).__name__, flush=True)


def main() -> None:
    """Run one session; print the status it ended with."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--address", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--name", default="resume")
    parser.add_argument(
        "--mode",
        choices=("good", "stall", "forfeit-late", "forfeit-burst", "echo-earlier"),
        default="good",
    )
    parser.add_argument("--stall-at", type=int, default=2)
    parser.add_argument("--resume", default="")
    parser.add_argument("--show-requests", action="store_true")
    args = parser.parse_args()
    print("STATUS", asyncio.run(play(args)), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
