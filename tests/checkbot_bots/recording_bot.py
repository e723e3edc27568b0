"""A correct bot that writes down every message it receives, for the tests that compare what
``arena check-bot`` sends with what a real referee sends.

    ARENA_ADDRESS=... ARENA_TOKEN=... ARENA_BOT_NAME=... python recording_bot.py RECORD [STALL]

It speaks raw hearts.v1 through the generated code (the SDK would digest the messages before a
test could see them) and plays as check-bot's scripted seats do: it passes the last cards of its
hand and plays the first of the legal cards (the lowest club it may play, else the lowest
diamond, ...), so that four of them at a referee play check-bot's deal card for card. Each
PlayResponse it receives, from any of its streams, is appended to the file RECORD as one line:
the serialised message in base64, written whole with its newline (a reader leaves a line without
one for later). With STALL, a number, it never answers a request of that hand number or later, so
that a test can interrupt its game there. It reconnects when a stream breaks (naming the broken
session), exits 0 after a Shutdown and 2 when its token is refused.
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import raw_stream

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb


def answer(request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    """A legal answer: the last cards of the (sorted) hand for a pass, else the first legal."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision.pass_cards.cards.extend(list(request.hand)[-request.pass_count :])
    else:
        decision.play_card.card = request.legal_cards[0]
    return bot_pb.PlayRequest(decision=decision)


def write_down(record: Path, response: bot_pb.PlayResponse) -> None:
    """Append ``response`` to the record as one whole line."""
    line = base64.b64encode(response.SerializeToString()).decode() + "\n"
    with record.open("a") as out:
        out.write(line)


def session(record: Path, stall: int | None, welcomed: list[str]) -> int | None:
    """One stream: the exit code to end with, or None to reconnect (``welcomed``: the session
    ids of the Welcomes so far)."""
    hello = bot_pb.Hello(
        bot_name=os.environ["ARENA_BOT_NAME"],
        token=os.environ["ARENA_TOKEN"],
        protocol_version=1,
        bot_version="recording",
        resume_session_id=welcomed[-1] if welcomed else "",
    )

    def reply(response: bot_pb.PlayResponse) -> bot_pb.PlayRequest | None:
        write_down(record, response)
        if response.HasField("welcome"):
            welcomed.append(response.welcome.session_id)
        asked = response.request if response.HasField("request") else None
        if asked is not None and (stall is None or asked.hand_number < stall):
            return answer(asked)
        return None

    return raw_stream.session(os.environ["ARENA_ADDRESS"], hello, reply, "recording_bot")


def main() -> int:
    """Play sessions until one says to stop."""
    if len(sys.argv) not in (2, 3):
        print("usage: recording_bot.py RECORD [STALL]", file=sys.stderr)
        return raw_stream.EXIT_REFUSED
    record = Path(sys.argv[1])
    stall = int(sys.argv[2]) if len(sys.argv) == 3 else None
    welcomed: list[str] = []
    return raw_stream.play(lambda: session(record, stall, welcomed))


if __name__ == "__main__":
    sys.exit(main())
