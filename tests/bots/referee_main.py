"""A standalone referee process for the shutdown tests: serve_forever playing one table.

    python tests/bots/referee_main.py TOKENS.json SPEC.json RECORD.json [GRACE_MS]

It prints ``PORT <n>`` once it listens and ``PLAYING`` once every seat's bot waits in the
lobby, plays the table, writes its record to RECORD.json and exits when the table is done or
when SIGINT/SIGTERM stops it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from arena.referee import Referee, RefereeConfig, serve_forever
from arena.table import TableSpec

BOTS_WAIT_MS = 60_000


def main() -> None:
    """Serve until the table is played or a signal stops the referee."""
    tokens = json.loads(Path(sys.argv[1]).read_text())
    spec = TableSpec.from_dict(json.loads(Path(sys.argv[2]).read_text()))
    out = Path(sys.argv[3])
    grace = int(sys.argv[4]) if len(sys.argv) > 4 else 0

    async def play(referee: Referee) -> None:
        if not await referee.wait_for_bots(spec.seats, BOTS_WAIT_MS):
            return
        print("PLAYING", flush=True)
        record = await referee.play_table(spec)
        out.write_text(json.dumps(record.to_dict()))

    status = serve_forever(
        RefereeConfig(shutdown_grace_ms=grace),
        tokens,
        "127.0.0.1:0",
        main=play,
        ready=lambda port: print("PORT", port, flush=True),
    )
    sys.exit(status)


if __name__ == "__main__":
    main()
