"""Record every message one bot exchanges with a real referee over one hand, for the protocol guide.

    .venv/bin/python scripts/record_transcript.py [--seed N] [--seat S] [--format text|json]

Starts a referee on 127.0.0.1, connects four in-process bots that speak raw hearts.v1 (each plays
its lowest legal card and passes its highest cards), plays one hand, and prints what the bot in
``--seat`` sent and received, in order, each message as protobuf's canonical JSON (the field
names of the .proto files). The bot ends with a Goodbye, so the transcript ends with the
referee's Shutdown. proto/hearts/v1/README.md shows a trimmed copy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.referee import Referee
from arena.rules import Rules
from arena.table import TableSpec

RANKS = "23456789TJQKA"
NAMES = ("north", "east", "south", "west")
LOBBY_WAIT_MS = 10_000


@dataclass(frozen=True)
class Line:
    """One message of the transcript."""

    sender: str
    """'bot' or 'referee'."""
    message: dict[str, Any]
    """The message as protobuf JSON."""


def as_json(message: Message) -> dict[str, Any]:
    """A message as protobuf's JSON mapping (.proto field names, enum names, 64-bit integers as
    strings), in the order the .proto declares the fields, zero values shown (seat 0 and trick 0
    are facts worth seeing) and empty lists left out."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None and message.WhichOneof(oneof.name) != field.name:
            continue
        if field.has_presence and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        repeated = field.is_repeated
        if repeated and not value:
            continue
        items = list(value) if repeated else [value]
        shown = [_scalar(field, v) for v in items]
        out[field.name] = shown if repeated else shown[0]
    return out


def _scalar(field: Any, value: Any) -> Any:
    if field.message_type is not None:
        return as_json(value)
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name
    if field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_INT64):
        return str(value)
    return value


def brief(value: Any, *, keep_state: bool) -> Any:
    """A copy for reading: the rules and the token elided, and the request's state unless kept."""
    if isinstance(value, list):
        return [brief(v, keep_state=keep_state) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "rules" or key == "token" or (key == "state" and not keep_state):
            out[key] = "..."
        else:
            out[key] = brief(item, keep_state=keep_state)
    return out


def answer(request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    """Pass the highest cards; play the lowest legal card."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        by_rank = sorted(request.hand, key=lambda c: RANKS.index(c[0]))
        decision.pass_cards.cards.extend(by_rank[-request.pass_count :])
    else:
        decision.play_card.card = min(request.legal_cards, key=lambda c: RANKS.index(c[0]))
    return bot_pb.PlayRequest(decision=decision)


async def bot(
    address: str, name: str, token: str, games_over: asyncio.Event, *, fault: bool = False
) -> list[Line]:
    """One bot's session, recorded: play until ``games_over``, then say Goodbye.

    With ``fault``, its first play with a choice is a held card the rules forbid, so that the
    transcript shows the referee's FaultNotice.
    """
    lines: list[Line] = []
    faulted = not fault
    async with grpc.aio.insecure_channel(address) as channel:
        # With no request iterator, the call is written to with write() (grpc-stubs omit that).
        call = bot_grpc.BotServiceStub(channel).Play()  # type: ignore[call-arg]

        async def send(request: bot_pb.PlayRequest) -> None:
            lines.append(Line("bot", as_json(request)))
            await call.write(request)

        await send(
            bot_pb.PlayRequest(
                hello=bot_pb.Hello(
                    bot_name=name,
                    token=token,
                    protocol_version=1,
                    bot_version="1.0.0",
                    client_library="record_transcript.py",
                )
            )
        )
        goodbye = asyncio.ensure_future(games_over.wait())
        while True:
            read = asyncio.ensure_future(call.read())
            done, _ = await asyncio.wait({read, goodbye}, return_when=asyncio.FIRST_COMPLETED)
            if read not in done:
                await send(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="transcript done")))
                await call.done_writing()
                goodbye = asyncio.ensure_future(asyncio.Event().wait())  # never again
            response = await read
            if response is grpc.aio.EOF:  # type: ignore[attr-defined]
                break
            assert isinstance(response, bot_pb.PlayResponse)
            lines.append(Line("referee", as_json(response)))
            if response.HasField("request"):
                reply = answer(response.request)
                illegal = [
                    c for c in response.request.hand if c not in response.request.legal_cards
                ]
                if not faulted and illegal and response.request.kind == bot_pb.DECISION_KIND_PLAY:
                    faulted = True
                    reply.decision.play_card.card = illegal[0]
                await send(reply)
        goodbye.cancel()
    return lines


async def record(seed: int, seat: int, *, fault: bool = False) -> list[Line]:
    """Play one hand with four recorded bots; the transcript of the bot in ``seat``."""
    tokens = {name: secrets.token_hex(16) for name in NAMES}
    referee = Referee(accounts={token: name for name, token in tokens.items()})
    port = await referee.start("127.0.0.1:0")
    address = f"127.0.0.1:{port}"
    games_over = asyncio.Event()
    try:
        bots = [
            asyncio.create_task(
                bot(address, name, tokens[name], games_over, fault=fault and i == seat)
            )
            for i, name in enumerate(NAMES)
        ]
        if not await referee.wait_for_bots(NAMES, LOBBY_WAIT_MS):
            raise SystemExit("the bots did not reach the referee's lobby")
        spec = TableSpec(
            table_id="transcript", rules=Rules(), seed=seed, seats=NAMES, board=str(seed), hands=1
        )
        record = await referee.play_table(spec)
        if len(record.faults) != int(fault):
            raise SystemExit(f"unexpected faults: {record.faults}")
        games_over.set()
        transcripts = await asyncio.gather(*bots)
    finally:
        await referee.stop()
    return transcripts[seat]


def main() -> None:
    """Parse the arguments, record, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2024, help="seed of the deal")
    parser.add_argument("--seat", type=int, default=0, choices=range(4), help="whose messages")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--brief",
        action="store_true",
        help="elide the rules, the token, and the public state of all but the first play request",
    )
    parser.add_argument(
        "--fault", action="store_true", help="the bot plays one illegal card, to show a fault"
    )
    args = parser.parse_args()
    lines = asyncio.run(record(args.seed, args.seat, fault=args.fault))
    if args.brief:
        shown_state = False
        short = []
        for line in lines:
            request = line.message.get("request", {})
            keep = request.get("kind") == "DECISION_KIND_PLAY" and not shown_state
            shown_state = shown_state or keep
            short.append(Line(line.sender, brief(line.message, keep_state=keep)))
        lines = short
    if args.format == "json":
        json.dump([{"from": x.sender, "message": x.message} for x in lines], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    for line in lines:
        arrow = "bot -> referee" if line.sender == "bot" else "referee -> bot"
        sys.stdout.write(f"# {arrow}\n{json.dumps(line.message)}\n")


if __name__ == "__main__":
    main()
