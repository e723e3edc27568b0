"""Load the competition server with many light bot sessions and measure it.

Usage: .venv/bin/python scripts/bench_server.py [--sessions 200] [--bots 50] [--processes 4]
                                                [--seconds 30]

What runs: ``arena serve`` as its own process (the ladder, the referee, the page), and a few
client processes, each an asyncio loop holding many sessions (``--sessions`` in all, spread over
``--bots`` accounts, several sessions per token) that answer every decision at once with the first
legal card. After ``--seconds`` the server gets SIGTERM and drains. Then, from the server's log and
its database:

* decisions per second: decisions that went over the wire, per second of play;
* p50/p99 decision latency: the referee's own measurement (request sent -> answer read);
* the server's resident memory at the start (serving, no bot yet) and at the end (before SIGTERM);
* games lost or left unrecorded: tables the log says started minus games in the database, and
  tables still marked running (both must be 0); interrupted games are counted apart.

Beside the server, measured in the same run on the same machine and driven by the same client
processes:

* the anchor: a bare grpc.aio server that answers each message of the same Play stream method with
  a pre-serialised decision request of a typical size, with one closed-loop stream per table the
  ladder can form (sessions / players: at a Hearts table one seat decides at a time). Its round
  trips per second and p99 bound what any referee can do here;
* the referee alone: the same referee with the simplest scheduler (any four idle bots form a
  table), no ladder, no database, no page. The server's ratio to it is what the competition layer
  (matchmaking, the commit of every game, ratings) costs.

On a shared 2-core machine the figures move with whatever else runs; compare the columns of one
run, not runs with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from bench_args import at_least, positive_seconds

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.server.accounts import AccountStore

REPO = Path(__file__).resolve().parent.parent
PLAY_METHOD = "/hearts.v1.BotService/Play"
PLAYERS = 4
START_TIMEOUT_S = 60.0
DRAIN = "20s"
PERCENT = 100.0


# ---- the client processes ---------------------------------------------------------------------


def answer(request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    """The cheapest legal answer: the first legal card, or the first cards to pass."""
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision = bot_pb.Decision(
            request_id=request.request_id,
            pass_cards=bot_pb.PassCards(cards=request.legal_cards[: request.pass_count]),
        )
    else:
        decision = bot_pb.Decision(
            request_id=request.request_id, play_card=bot_pb.PlayCard(card=request.legal_cards[0])
        )
    return bot_pb.PlayRequest(decision=decision)


async def bot_session(address: str, name: str, token: str, counts: dict[str, int]) -> None:
    """One session: Hello, then answer every request until the referee ends the stream."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = bot_grpc.BotServiceStub(channel)
        # grpc-stubs make the request iterator required; grpc.aio takes writes instead.
        call = stub.Play()  # type: ignore[call-arg]
        hello = bot_pb.Hello(bot_name=name, token=token, protocol_version=1)
        await call.write(bot_pb.PlayRequest(hello=hello))
        try:
            async for response in call:
                if response.HasField("request"):
                    await call.write(answer(response.request))
                    counts["decisions"] += 1
                if response.HasField("shutdown"):
                    counts["shutdowns"] += 1
                    break
        except grpc.aio.AioRpcError as e:
            counts[f"error {e.code().name}"] = counts.get(f"error {e.code().name}", 0) + 1


def typical_request() -> bytes:
    """A PlayResponse carrying a mid-hand play request: the size the referee sends."""
    hand = ["2C", "7C", "9D", "JD", "KD", "3H", "8H", "QH", "4S", "TS"]
    tricks = [
        game_pb.Trick(trick_number=i, leader=i % 4, cards=["AC", "KC", "QC", "JC"], winner=0)
        for i in range(3)
    ]
    state = game_pb.PublicState(
        players=4,
        seat_names=["alpha", "bravo", "charlie", "delta"],
        current_trick=game_pb.Trick(trick_number=3, leader=1, cards=["5D", "6D"]),
        completed_tricks=tricks,
        hand_points=[0, 0, 0, 0],
        game_totals=[0, 0, 0, 0],
        cards_in_hand=[10, 9, 9, 10],
        passed_cards=["AS", "KS", "QS"],
        received_cards=["2C", "7C", "9D"],
    )
    request = bot_pb.DecisionRequest(
        request_id=1234,
        kind=bot_pb.DECISION_KIND_PLAY,
        game_id="g1-g0",
        hand_number=0,
        trick_number=3,
        your_seat=3,
        hand=hand,
        legal_cards=["9D", "JD", "KD"],
        move_deadline_ms=1000,
        time_bank_ms=10000,
        state=state,
    )
    return bot_pb.PlayResponse(request=request).SerializeToString()


async def ping_session(address: str, until: float, rtts: list[float]) -> None:
    """One closed-loop stream: send a decision, wait for the reply, repeat until ``until``."""
    payload = bot_pb.PlayRequest(
        decision=bot_pb.Decision(request_id=1234, play_card=bot_pb.PlayCard(card="9D"))
    ).SerializeToString()
    async with grpc.aio.insecure_channel(address) as channel:
        # Raw bytes both ways, as the stubs would send them (see stub.Play above).
        call = channel.stream_stream(PLAY_METHOD)()  # type: ignore[call-arg]
        while time.monotonic() < until:
            start = time.perf_counter()
            await call.write(payload)
            await call.read()
            rtts.append((time.perf_counter() - start) * 1000)
        await call.done_writing()


async def client_main(spec: dict[str, Any]) -> dict[str, Any]:
    """A client process: many sessions on one loop; returns its counts (and latencies)."""
    address = f"127.0.0.1:{spec['port']}"
    if spec["mode"] == "pingpong":
        rtts: list[float] = []
        until = time.monotonic() + spec["seconds"]
        await asyncio.gather(*(ping_session(address, until, rtts) for _ in range(spec["streams"])))
        return {"rtts": rtts}
    counts = {"decisions": 0, "shutdowns": 0}
    await asyncio.gather(*(bot_session(address, n, t, counts) for n, t in spec["sessions"]))
    return counts


# ---- the anchor server ------------------------------------------------------------------------


async def pingpong_server_main() -> None:
    """A bare grpc.aio server: each message on a Play stream gets the typical request back."""
    reply = typical_request()

    async def play(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        async for _ in requests:
            yield reply

    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(play)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("hearts.v1.BotService", {"Play": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    await server.wait_for_termination()


# ---- the referee alone (no ladder, no ledger, no page) ----------------------------------------


async def referee_only_main(tokens: dict[str, str], per_bot: int) -> dict[str, Any]:
    """The referee with the simplest scheduler: any four bots with idle sessions form a table.
    Runs until SIGTERM; returns the decisions' latencies and the span of play."""
    from arena.referee import Referee, RefereeConfig
    from arena.rules import Rules
    from arena.table import GameRecord, TableSpec, Termination

    referee = Referee(RefereeConfig(max_sessions_per_token=per_bot), tokens)
    port = await referee.start("127.0.0.1:0")
    print(port, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    records: list[GameRecord] = []
    tasks: set[asyncio.Task[None]] = set()
    serial = 0

    async def play(spec: TableSpec) -> None:
        records.append(await referee.play_table(spec))

    async def schedule() -> None:
        nonlocal serial
        while True:
            idle = dict(referee.idle())
            while sum(1 for n in idle.values() if n > 0) >= PLAYERS:
                seats = tuple(sorted(idle, key=lambda b: -idle[b])[:PLAYERS])
                for bot in seats:
                    idle[bot] -= 1
                spec = TableSpec(f"t{serial}", Rules(), serial, seats, str(serial))
                serial += 1
                task = asyncio.get_running_loop().create_task(play(spec))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            # Let the new tables take their sessions (their first step) before looking again.
            await asyncio.sleep(0)
            await referee.lobby_changed()

    scheduler = asyncio.get_running_loop().create_task(schedule())
    await stop.wait()
    scheduler.cancel()
    await referee.stop(0)
    if tasks:
        await asyncio.wait(tasks)
    played = [r for r in records if r.termination is Termination.NORMAL]
    latencies = [d.elapsed_ms for r in played for d in r.decisions if not d.forced]
    span = max(r.finished_at for r in played) - min(r.started_at for r in played)
    return {"latencies": latencies, "span": span}


def referee_only(args: argparse.Namespace, tokens: dict[str, str]) -> tuple[float, float, float]:
    """Decisions per second, p50 and p99 in ms, of the referee alone under the same clients."""
    per_bot = -(-args.sessions // args.bots)
    server = subprocess.Popen(
        [sys.executable, __file__, "--role", "referee-only"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(
        json.dumps({"tokens": {t: n for n, t in tokens.items()}, "per_bot": per_bot})
    )
    server.stdin.close()
    port = int(server.stdout.readline())
    names = sorted(tokens)
    sessions = [
        (names[i % len(names)], tokens[names[i % len(names)]]) for i in range(args.sessions)
    ]
    specs = [
        {"mode": "server", "port": port, "sessions": sessions[i :: args.processes]}
        for i in range(args.processes)
    ]

    def during() -> None:
        time.sleep(args.seconds)
        server.send_signal(signal.SIGTERM)

    run_clients(specs, during)
    result = json.loads(server.stdout.read())
    server.wait(timeout=120)
    latencies = result["latencies"]
    return len(latencies) / result["span"], percentile(latencies, 50), percentile(latencies, 99)


# ---- the driver -------------------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / PERCENT * (len(ordered) - 1)))]


def spawn_clients(specs: list[dict[str, Any]]) -> list[subprocess.Popen[str]]:
    """Start the client processes."""
    return [
        subprocess.Popen(
            [sys.executable, __file__, "--role", "client"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in specs
    ]


def run_clients(specs: list[dict[str, Any]], during: Any = None) -> list[dict[str, Any]]:
    """Run one client process per spec; call ``during()`` while they run; their results."""
    procs = spawn_clients(specs)
    for proc, spec in zip(procs, specs, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(spec))
        proc.stdin.close()
    if during is not None:
        during()
    results = []
    for proc in procs:
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait(timeout=600)
        results.append(json.loads(out))
    return results


def anchor(streams: int, processes: int, seconds: float) -> tuple[float, float, float]:
    """Bare ping-pong round trips per second, p50 and p99 in ms."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--role", "pingpong-server"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        per = [streams // processes + (i < streams % processes) for i in range(processes)]
        specs = [
            {"mode": "pingpong", "port": port, "streams": n, "seconds": seconds} for n in per if n
        ]
        results = run_clients(specs)
    finally:
        server.kill()
        server.wait()
    rtts = [x for r in results for x in r["rtts"]]
    return len(rtts) / seconds, percentile(rtts, 50), percentile(rtts, 99)


def measure_server(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Run the server under load and read its figures from its log and database."""
    db = work / "bench.db"
    log = work / "bench.log"
    per_bot = -(-args.sessions // args.bots)
    (work / "bench.toml").write_text(
        f'max_sessions = {per_bot}\nfit_interval = "2s"\nmove_time = "5s"\ndrain = "{DRAIN}"\n'
        f'name = "bench"\n'
    )
    accounts = AccountStore(db)
    tokens = {f"bot{i:03d}": accounts.add(f"bot{i:03d}") for i in range(args.bots)}
    accounts.close()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena.server.cli",
            "serve",
            "--db",
            str(db),
            "--port",
            "0",
            "--web-port",
            "0",
            "--config",
            str(work / "bench.toml"),
            "--log",
            str(log),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r"connect to [\d.]+:(\d+)", line)
        if match is None:
            raise SystemExit(f"the server did not start: {line!r}")
        port = int(match[1])
        memory_start = rss_mib(server.pid)
        names = sorted(tokens)
        sessions = [
            (names[i % len(names)], tokens[names[i % len(names)]]) for i in range(args.sessions)
        ]
        specs = [
            {"mode": "server", "port": port, "sessions": sessions[i :: args.processes]}
            for i in range(args.processes)
        ]
        figures: dict[str, Any] = {}

        def during() -> None:
            time.sleep(args.seconds)
            figures["memory_end"] = rss_mib(server.pid)
            server.send_signal(signal.SIGTERM)

        clients = run_clients(specs, during)
        code = server.wait(timeout=600)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    started = 0
    for text in log.read_text().splitlines():
        if json.loads(text)["msg"] == "table started":
            started += 1
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM games").fetchone()[0]
        ends = dict(conn.execute("SELECT termination, COUNT(*) FROM games GROUP BY termination"))
        running = conn.execute("SELECT COUNT(*) FROM server_running").fetchone()[0]
        first, last = conn.execute("SELECT MIN(started_at), MAX(finished_at) FROM games").fetchone()
        latencies: list[float] = []
        for (text,) in conn.execute("SELECT record FROM games WHERE termination = 'normal'"):
            record = json.loads(text)
            latencies += [d["elapsed_ms"] for d in record["decisions"] if not d["forced"]]
    span = (last - first) if first is not None else float("nan")
    return {
        "exit_code": code,
        "memory_start": memory_start,
        "memory_end": figures["memory_end"],
        "tables_started": started,
        "games_stored": stored,
        "terminations": ends,
        "still_running": running,
        "lost": started - stored + running,
        "decisions": len(latencies),
        "decisions_per_s": len(latencies) / span if span else float("nan"),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "mean_ms": statistics.fmean(latencies) if latencies else float("nan"),
        "client_decisions": sum(c["decisions"] for c in clients),
        "client_errors": {k: v for c in clients for k, v in c.items() if k.startswith("error")},
        "span_s": span,
        "tokens": tokens,
    }


def _interrupt(signum: int, frame: object) -> None:
    # Once: `timeout` signals the whole process group as well as the script itself.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main() -> None:
    """Parse the flags, run the anchor and the server, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sessions",
        type=at_least(PLAYERS),
        default=200,
        help="bot sessions in all, spread over the client processes (default 200)",
    )
    parser.add_argument(
        "--bots",
        type=at_least(PLAYERS),
        default=50,
        help="bot accounts the sessions share, several sessions per token (default 50)",
    )
    parser.add_argument(
        "--processes",
        type=at_least(1),
        default=4,
        help="client processes holding the sessions (default 4)",
    )
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=30.0,
        help="length of each measured run, then SIGTERM (default 30)",
    )
    parser.add_argument("--keep", type=Path, help="keep the database and log in this folder")
    # The script's own processes are this script run with a role: not for a user.
    parser.add_argument(
        "--role",
        choices=("driver", "client", "pingpong-server", "referee-only"),
        default="driver",
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args()
    if args.role == "driver" and args.bots > args.sessions:
        parser.error(
            f"argument --bots: {args.bots} bots for {args.sessions} sessions: give at most as many"
        )
    if args.keep is not None:
        # Found only at mkdir, after the parse, it was a FileExistsError (or another OSError)
        # traceback: the folder is made now, as the run would make it.
        if args.keep.exists() and not args.keep.is_dir():
            parser.error(f"argument --keep: {args.keep} is a file, not a folder: give a folder")
        try:
            args.keep.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            parser.error(f"argument --keep: cannot make the folder {args.keep}: {e.strerror}")
    if args.keep is not None and (args.keep / "bench.db").exists():
        # A second run's games would be counted with the first's ("games lost" and the rates).
        parser.error(
            f"argument --keep: {args.keep} holds an earlier run's bench.db: give a new folder"
        )
    if args.role == "client":
        spec = json.loads(sys.stdin.read())
        print(json.dumps(asyncio.run(client_main(spec))))
        return
    if args.role == "pingpong-server":
        asyncio.run(pingpong_server_main())
        return
    if args.role == "referee-only":
        spec = json.loads(sys.stdin.read())
        print(json.dumps(asyncio.run(referee_only_main(spec["tokens"], spec["per_bot"]))))
        return
    # A SIGTERM (a `timeout`, a CI job's end) unwinds as Ctrl-C does, so that the server process
    # and the temporary folder are cleaned up, not left to the init process.
    signal.signal(signal.SIGTERM, _interrupt)
    tables = args.sessions // PLAYERS
    print(
        f"{args.sessions} sessions of {args.bots} bots in {args.processes} client processes, "
        f"{args.seconds:g} s of play; {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        work = Path(tmp) if args.keep is None else args.keep
        work.mkdir(parents=True, exist_ok=True)
        server = measure_server(args, work)
    alone = referee_only(args, server["tokens"])
    rate, p50, p99 = anchor(tables, args.processes, args.seconds)
    print(f"{'':28}{'server':>10}{'referee':>10}{'anchor':>10}{'vs referee':>12}{'vs anchor':>11}")
    rows = (
        ("decisions per second", server["decisions_per_s"], alone[0], rate, "{:10.0f}"),
        ("p50 decision latency (ms)", server["p50_ms"], alone[1], p50, "{:10.2f}"),
        ("p99 decision latency (ms)", server["p99_ms"], alone[2], p99, "{:10.2f}"),
    )
    for label, ours, referee, theirs, shape in rows:
        print(
            f"{label:28}{shape.format(ours)}{shape.format(referee)}{shape.format(theirs)}"
            f"{ours / referee:12.2f}{ours / theirs:11.2f}"
        )
    print(
        "referee: the referee alone, any four idle bots form a table (no ladder, ledger or page);"
    )
    print(
        f"anchor: bare grpc.aio ping-pong, {tables} closed-loop streams (one per table), "
        "same message sizes; all three driven by the same client processes"
    )
    print(
        f"server memory (RSS): {server['memory_start']:.1f} MiB at the start, "
        f"{server['memory_end']:.1f} MiB at the end"
    )
    print(
        f"tables started {server['tables_started']}, games stored {server['games_stored']} "
        f"{server['terminations']}, still marked running {server['still_running']}"
    )
    print(f"games lost or left unrecorded: {server['lost']}")
    print(
        f"decisions measured {server['decisions']} over {server['span_s']:.1f} s; "
        f"answered by the clients {server['client_decisions']}; "
        f"client errors {server['client_errors'] or 'none'}; server exit code {server['exit_code']}"
    )
    if server["lost"] != 0 or server["exit_code"] != 0:
        raise SystemExit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("bench_server: interrupted; the server and its files are gone", file=sys.stderr)
        sys.exit(130)
