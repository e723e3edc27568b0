"""Audit of the referee against the hearts.v1 contract (the .proto comments and the bot authors'
guide proto/hearts/v1/README.md), from a raw gRPC bot's side: the generated stubs only, no
arena.client. A real referee on 127.0.0.1 port 0."""

from __future__ import annotations

import grpc
import pytest

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.referee import BotIdentity, RefereeConfig, RefereeThread

WAIT_S = 60.0


class BrokenAccounts:
    """An account store whose every lookup fails (a database that is down, say)."""

    def lookup(self, token: str) -> BotIdentity | None:
        """Fail, as a store whose backend is gone does."""
        raise OSError("the account database is unreachable")


def _refusal(port: int, hello: bot_pb.Hello) -> grpc.RpcError:
    """The status that ends a Play stream opened with ``hello``."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        responses = bot_grpc.BotServiceStub(channel).Play(
            iter([bot_pb.PlayRequest(hello=hello)]), timeout=WAIT_S
        )
        with pytest.raises(grpc.RpcError) as refused:
            for _ in responses:
                pass
    assert isinstance(refused.value, grpc.RpcError)
    return refused.value


def test_a_failed_account_lookup_says_to_retry_with_backoff_and_report_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # bot_service.proto: "each with a message that says what to do ... INTERNAL: a fault of
    # the referee. Retry with backoff and report it." The message said only "the referee could
    # not check the token", leaving a bot author to guess whether the token was wrong.
    referee = RefereeThread(RefereeConfig(), BrokenAccounts())
    port = referee.start("127.0.0.1:0")
    try:
        with caplog.at_level("ERROR", logger="arena.referee"):
            error = _refusal(
                port, bot_pb.Hello(bot_name="bot", token="any-token", protocol_version=1)
            )
    finally:
        referee.stop(0)
    assert error.code() is grpc.StatusCode.INTERNAL
    details = error.details() or ""
    assert details.startswith("the referee could not check the token")
    assert "retry with backoff" in details
    assert "tell the organiser" in details
    assert "any-token" not in details  # the token is never echoed
    assert "account lookup failed" in caplog.text  # the organiser's side of the story
