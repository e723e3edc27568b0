"""A bot with one deliberate flaw, for the tests of ``arena check-bot``.

    ARENA_ADDRESS=... ARENA_TOKEN=... ARENA_BOT_NAME=... python broken_bot.py MODE

It speaks raw hearts.v1 through the generated code (not the SDK, which would not let it make
these mistakes) and is correct in everything but its mode's flaw:

* ``good``: no flaw (the control);
* ``asks-forced``: no flaw, but asks to decide forced moves too (Hello.decide_forced_moves);
* ``ignores-suit``: plays the lowest-ranked card of its whole hand, legal or not;
* ``first-in-hand``: plays the first card of its (sorted) hand, legal or not;
* ``later-kind``: answers a play with a PlayRequest of a kind a later revision might add;
* ``short-pass``: passes one card too few;
* ``no-reconnect``: exits with code 1 when its stream breaks, instead of reconnecting;
* ``idles-after-break``: when its stream breaks, stays running and never opens another;
* ``retries-refusal``: keeps reconnecting after UNAUTHENTICATED;
* ``no-resume``: reconnects without Hello.resume_session_id (optional: not a failure);
* ``wrong-resume``: reconnects naming a session that never was;
* ``twice``: sends every answer twice;
* ``welcome-alone``: no flaw, but exits with code 3 if a Welcome comes with anything else
  (bot_service.proto: "on a reconnection the Welcome comes alone");
* ``dies-on-fault``: exits with code 4 when it is told of a fault of its own (a FaultNotice).

Every other mode names its broken session in Hello.resume_session_id on a reconnect.
"""

from __future__ import annotations

import os
import queue
import sys
import time
from collections.abc import Iterator

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc

MODES = (
    "good",
    "asks-forced",
    "ignores-suit",
    "first-in-hand",
    "later-kind",
    "short-pass",
    "no-reconnect",
    "idles-after-break",
    "retries-refusal",
    "no-resume",
    "wrong-resume",
    "twice",
    "welcome-alone",
    "dies-on-fault",
)
EXIT_NOT_ALONE = 3
EXIT_FAULTED = 4
RANKS = "23456789TJQKA"
RETRY_S = 0.1
EXIT_REFUSED = 2
EXIT_BROKEN = 1
IDLE_S = 600.0


def lowest(cards: list[str]) -> str:
    """The lowest-ranked card (the suit order breaks ties)."""
    return min(cards, key=lambda c: (RANKS.index(c[0]), "CDHS".index(c[1])))


def answer(mode: str, request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    """The mode's answer to a request."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        count = request.pass_count - 1 if mode == "short-pass" else request.pass_count
        decision.pass_cards.cards.extend(list(request.hand)[-count:] if count else [])
    else:
        if mode == "later-kind":  # field 4 of PlayRequest, which this revision lacks
            return bot_pb.PlayRequest.FromString(b'"\x02\x08\x01')
        if mode == "first-in-hand":  # the first card of its sorted hand, legal or not
            decision.play_card.card = request.hand[0]
        else:
            pool = request.hand if mode == "ignores-suit" else request.legal_cards
            decision.play_card.card = lowest(list(pool))
    return bot_pb.PlayRequest(decision=decision)


def resume_id(mode: str, last: str) -> str:
    """Hello.resume_session_id for a stream after one whose Welcome said ``last``."""
    if not last or mode == "no-resume":
        return ""
    return "never-was" if mode == "wrong-resume" else last


def session(mode: str, welcomed: list[str]) -> int | None:
    """One stream: the exit code to end with, or None to reconnect (``welcomed``: the session
    ids of the Welcomes so far)."""
    outbox: queue.Queue[bot_pb.PlayRequest | None] = queue.Queue()
    outbox.put(
        bot_pb.PlayRequest(
            hello=bot_pb.Hello(
                bot_name=os.environ["ARENA_BOT_NAME"],
                token=os.environ["ARENA_TOKEN"],
                protocol_version=1,
                bot_version=mode,
                decide_forced_moves=mode == "asks-forced",
                resume_session_id=resume_id(mode, welcomed[-1] if welcomed else ""),
            )
        )
    )

    def requests() -> Iterator[bot_pb.PlayRequest]:
        while (item := outbox.get()) is not None:
            yield item

    with grpc.insecure_channel(os.environ["ARENA_ADDRESS"]) as channel:
        stub = bot_grpc.BotServiceStub(channel)
        try:
            for response in stub.Play(requests()):
                if response.HasField("welcome"):
                    welcomed.append(response.welcome.session_id)
                    if mode == "welcome-alone" and (
                        response.events or response.HasField("request")
                    ):
                        print("broken_bot: the Welcome did not come alone", file=sys.stderr)
                        return EXIT_NOT_ALONE
                if mode == "dies-on-fault" and any(
                    e.HasField("fault_notice") for e in response.events
                ):
                    print("broken_bot: told of a fault; giving up", file=sys.stderr, flush=True)
                    return EXIT_FAULTED
                if response.HasField("request"):
                    outbox.put(answer(mode, response.request))
                    if mode == "twice":
                        outbox.put(answer(mode, response.request))
                if response.HasField("shutdown"):
                    outbox.put(None)
                    return 0
        except grpc.RpcError as e:
            outbox.put(None)
            code = e.code()
            if code is grpc.StatusCode.UNAUTHENTICATED and mode != "retries-refusal":
                print(f"broken_bot: refused: {e.details()}", file=sys.stderr)
                return EXIT_REFUSED
            if code is grpc.StatusCode.UNAUTHENTICATED:
                print("broken_bot: refused; trying again", file=sys.stderr, flush=True)
            if mode == "no-reconnect":
                print(f"broken_bot: stream broke ({code.name}); giving up", file=sys.stderr)
                return EXIT_BROKEN
            if mode == "idles-after-break":
                print(f"broken_bot: stream broke ({code.name}); idling", file=sys.stderr)
                sys.stderr.flush()
                time.sleep(IDLE_S)  # alive, and never back (check-bot stops it)
                return EXIT_BROKEN
            return None
        outbox.put(None)
        return None


def main() -> int:
    """Play sessions until one says to stop."""
    mode = sys.argv[1] if len(sys.argv) > 1 else "good"
    if mode not in MODES:
        print(f"broken_bot: unknown mode {mode!r}; modes: {', '.join(MODES)}", file=sys.stderr)
        return EXIT_REFUSED
    welcomed: list[str] = []
    while (code := session(mode, welcomed)) is None:
        time.sleep(RETRY_S)  # a bot's own reconnect backoff
    return code


if __name__ == "__main__":
    sys.exit(main())
