"""Hands per second of `arena run` with trivial bots, beside the bound of a bare ping-pong.

    python scripts/bench_arena.py [--boards 30] [--pings 4000]

Two measurements in one run, on loopback, with real processes:

1. the anchor: a bare grpc.aio bidi ping-pong with no game logic, a ring of four client processes
   answering in turn, one message in flight at a time (as at a table), timed on the server; the
   median round trip is the latency of one decision with nothing else to do;
2. `arena run` itself (the director, the referee thread, four lowcard sample bots, SQLite, replay
   files) at concurrency 1 and 2, timed from the first game's start to the last game's end as the
   referee recorded them (bot start-up is not counted).

The bound: a hand needs a number of round trips one after another, counted from the run's own
records: every play the referee asked for (a single legal card is played without asking) plus one
for the pass (the four seats pass at the same time). At concurrency c the bound is
c / (round trips per hand x ping-pong latency) hands per second; the ratio says how close the
whole arena gets to the bare wire. On a 2-core machine, concurrency 2 shares the cores with eight
bot processes, the referee and the director, so its ratio is expected to fall.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from bench_args import at_least

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.config import build_config  # noqa: E402
from arena.director.progress import PlainReporter  # noqa: E402
from arena.director.run import run_batch  # noqa: E402
from arena.store import Store  # noqa: E402
from arena.table import GameRecord  # noqa: E402

PING_METHOD = "/bench.Ping/Ring"
RING = 4
"""Clients in the ping-pong ring: the seats of a table."""
REQUEST_BYTES = 900
"""About the size of a decision request (884 B on average in scripts/bench_protocol.py)."""
REPLY_BYTES = 20
"""About the size of an answer (a request id and a card)."""
WARMUP = 200
"""Round trips left out of the figures (connections and caches warming up)."""
MS = 1000.0
LOWCARD = ROOT / "sample_bots" / "lowcard.py"


# ---- the bare ping-pong -------------------------------------------------------------------------


async def ping_client(address: str) -> None:
    """A ring member: answers every message at once, until the server ends the stream."""
    async with grpc.aio.insecure_channel(address) as channel:
        # grpc-stubs predate grpc.aio, whose request iterator is optional (we write instead).
        call = channel.stream_stream(PING_METHOD)()  # type: ignore[call-arg]
        await call.write(b"hello")
        reply = b"r" * REPLY_BYTES
        async for _ in call:
            await call.write(reply)


class Ring:
    """Server side: once every client has joined, sends to each in turn and waits for its answer."""

    def __init__(self, pings: int) -> None:
        self.pings = pings
        self.samples: list[float] = []
        self.turns = [asyncio.Event() for _ in range(RING)]
        self.joined = 0
        self.everyone = asyncio.Event()
        self.finished = asyncio.Event()

    async def handler(
        self, _requests: object, context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> None:
        """One client's stream: its turns of the ring."""
        await context.read()  # the hello
        seat = self.joined
        self.joined += 1
        if self.joined == RING:
            self.everyone.set()
            self.turns[0].set()
        await self.everyone.wait()
        payload = b"q" * REQUEST_BYTES
        while True:
            await self.turns[seat].wait()
            self.turns[seat].clear()
            if len(self.samples) >= self.pings:
                self.finished.set()
                self.turns[(seat + 1) % RING].set()
                return
            started = time.perf_counter()
            await context.write(payload)
            await context.read()
            self.samples.append(time.perf_counter() - started)
            self.turns[(seat + 1) % RING].set()


async def ping_pong(pings: int) -> list[float]:
    """Round-trip times, in seconds, of a ring of client processes."""
    ring = Ring(pings + WARMUP)
    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(ring.handler)  # bytes in, bytes out
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Ping", {"Ring": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    clients = [
        subprocess.Popen([sys.executable, __file__, "--ping-client", f"127.0.0.1:{port}"])
        for _ in range(RING)
    ]
    try:
        await ring.finished.wait()
    finally:
        await server.stop(0)
        for client in clients:
            client.wait(timeout=30)
    return ring.samples[WARMUP:]


# ---- the arena -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArenaFigure:
    """One batch of the arena."""

    concurrency: int
    hands: int
    seconds: float
    round_trips_per_hand: float

    @property
    def hands_per_second(self) -> float:
        """Hands per second of play."""
        return self.hands / self.seconds


def sequential_round_trips(record: GameRecord) -> int:
    """Round trips a table's hands needed one after another: asked plays, plus one per pass."""
    asked_plays = sum(1 for d in record.decisions if d.kind == "play" and not d.forced)
    passes = {d.hand for d in record.decisions if d.kind == "pass" and not d.forced}
    return asked_plays + len(passes)


def arena_batch(concurrency: int, boards: int, folder: Path) -> ArenaFigure:
    """Play ``boards`` boards of four lowcard bots (every rotation) and time them."""
    lowcard = f"{shlex.quote(sys.executable)} {shlex.quote(str(LOWCARD))}"
    config = build_config(
        bots=[f"t{i}={lowcard}" for i in range(RING)],
        boards=boards,
        concurrency=concurrency,
        move_time="10s",
        db=folder / f"bench-{concurrency}.db",
    )
    outcome = run_batch(config, PlainReporter(io.StringIO()))
    with Store.open(config.db, create=False) as store:
        records = [r for _, r in store.records(outcome.run_id)]
    hands = sum(len(r.hands) for r in records)
    seconds = max(r.finished_at for r in records) - min(r.started_at for r in records)
    trips = sum(sequential_round_trips(r) for r in records) / hands
    return ArenaFigure(concurrency, hands, seconds, trips)


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--boards", type=at_least(1), default=30, help="boards per batch (x4 hands)"
    )
    parser.add_argument("--pings", type=at_least(1), default=4000, help="ping-pong round trips")
    parser.add_argument("--ping-client", default="", help=argparse.SUPPRESS)
    parser.add_argument("--ping-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ping_client:
        asyncio.run(ping_client(args.ping_client))
        return
    if args.ping_server:
        print(json.dumps(asyncio.run(ping_pong(args.pings))))
        return

    # The anchor's server runs in a process of its own: grpc.aio keeps a process-wide poller
    # bound to the first event loop, which the referee's loop must not inherit.
    anchor = subprocess.run(
        [sys.executable, __file__, "--ping-server", "--pings", str(args.pings)],
        capture_output=True,
        text=True,
        check=True,
    )
    samples = json.loads(anchor.stdout)
    latency = statistics.median(samples)
    print(
        f"bare grpc.aio ping-pong, ring of {RING} processes: p50 {latency * MS:.3f} ms, "
        f"mean {statistics.fmean(samples) * MS:.3f} ms over {len(samples)} round trips"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for concurrency in (1, 2):
            figure = arena_batch(concurrency, args.boards, Path(tmp))
            bound = concurrency / (figure.round_trips_per_hand * latency)
            print(
                f"arena run, 4 lowcard bots, concurrency {concurrency}: "
                f"{figure.hands_per_second:.1f} hands/s ({figure.hands} hands in "
                f"{figure.seconds:.2f} s, {figure.round_trips_per_hand:.1f} round trips/hand); "
                f"ping-pong bound {bound:.1f} hands/s; ratio {figure.hands_per_second / bound:.2f}"
            )


if __name__ == "__main__":
    main()
