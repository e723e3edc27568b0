"""A standalone referee whose ``main`` never returns by itself, for the shutdown tests.

    python tests/bots/referee_loop.py MODE RECORDS.txt

MODE ``sleep``: main sleeps (as a host waiting for its next round). MODE ``loop``: main plays
tables one after another, for ever, as the simplest host would (``while True: await
play_table(spec)``), with bots that never connect, and writes each record's reason to
RECORDS.txt. It prints ``STARTED`` once main runs; SIGINT/SIGTERM must end it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from arena.referee import Referee, RefereeConfig, serve_forever
from arena.rules import Rules
from arena.table import TableSpec

WAIT_MS = 60_000
"""How long each table waits for its bots: longer than any test, so the stop finds it waiting."""


def main() -> None:
    """Serve until a signal; exit with serve_forever's status."""
    mode, records = sys.argv[1], Path(sys.argv[2])

    async def host(referee: Referee) -> None:
        print("STARTED", flush=True)
        if mode == "sleep":
            await asyncio.sleep(3600)
        played = 0
        with records.open("w") as out:
            while True:
                spec = TableSpec(f"t{played}", Rules(), played, ("a", "b", "c", "d"), "0")
                record = await referee.play_table(spec, wait_ms=WAIT_MS)
                played += 1
                print(record.reason, file=out, flush=True)

    sys.exit(serve_forever(RefereeConfig(), {"tok": "a"}, "127.0.0.1:0", main=host))


if __name__ == "__main__":
    main()
