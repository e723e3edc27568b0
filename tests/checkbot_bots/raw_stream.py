"""One raw hearts.v1 stream for the test bots here, which speak the protocol through the
generated code (the SDK would digest, or respell, what a test must see or send as it is)."""

from __future__ import annotations

import queue
import sys
import time
from collections.abc import Callable, Iterator

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc

RETRY_S = 0.1
EXIT_REFUSED = 2

Answer = Callable[[bot_pb.PlayResponse], bot_pb.PlayRequest | None]
"""Given each message received, the answer to send (None: none)."""


def session(address: str, hello: bot_pb.Hello, answer: Answer, who: str) -> int | None:
    """One stream: the exit code to end with (0 after a Shutdown, EXIT_REFUSED when the token is
    refused), or None to reconnect (the stream broke)."""
    outbox: queue.Queue[bot_pb.PlayRequest | None] = queue.Queue()
    outbox.put(bot_pb.PlayRequest(hello=hello))

    def requests() -> Iterator[bot_pb.PlayRequest]:
        while (item := outbox.get()) is not None:
            yield item

    with grpc.insecure_channel(address) as channel:
        try:
            for response in bot_grpc.BotServiceStub(channel).Play(requests()):
                reply = answer(response)
                if reply is not None:
                    outbox.put(reply)
                if response.HasField("shutdown"):
                    outbox.put(None)
                    return 0
        except grpc.RpcError as e:
            outbox.put(None)
            if e.code() is grpc.StatusCode.UNAUTHENTICATED:
                print(f"{who}: refused: {e.details()}", file=sys.stderr)
                return EXIT_REFUSED
            return None  # the stream broke: come back, as a bot must
        outbox.put(None)
        return None


def play(sessions: Callable[[], int | None]) -> int:
    """Run ``sessions`` until one ends with an exit code (a bot's own reconnect backoff between)."""
    while (code := sessions()) is None:
        time.sleep(RETRY_S)
    return code
