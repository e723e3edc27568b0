"""The competition server (``arena serve``): bots enter with tokens, a ladder plays, a page shows.

One process, one asyncio loop: the referee (grpc.aio) hosts the bots' sessions and plays tables;
the :class:`~arena.server.competition.Competition` forms the tables (a continuous ladder, or a
fixed event from the config) and records every game; a small HTTP server serves the leaderboard
page and its JSON API. SQLite runs in worker threads and the published rating fit in a worker
process, so that the loop never waits on either.

Modules:

* :mod:`~arena.server.accounts`: bot accounts, tokens kept as SHA-256 hashes, bans, admin token.
* :mod:`~arena.server.matchmaking`: pure functions: ladder tables (few games first, close ratings,
  duplicate boards in every seat rotation), a fixed event's schedule.
* :mod:`~arena.server.config`: the TOML settings (table size, rules, clocks, limits, event).
* :mod:`~arena.server.ledger`: the games in the arena store, tables marked running, crash recovery.
* :mod:`~arena.server.competition`: the ladder loop, live (OpenSkill) and published (Elo) ratings,
  standings, admin actions, drain.
* :mod:`~arena.server.http`, :mod:`~arena.server.webapp`, ``web/``: the page and its API.
* :mod:`~arena.server.app`: :func:`~arena.server.app.serve`, everything wired together.
* :mod:`~arena.server.cli`: ``arena serve``, ``arena bots ...``, ``arena admin ...``.
* :mod:`~arena.server.logs`: JSON-lines logging.

An organiser's session::

    arena bots add alpha --db comp.db          # prints alpha's token, once
    arena admin token --db comp.db             # prints the admin token, once
    arena serve --db comp.db --host 0.0.0.0 --port 50051 --web-port 8080 --config comp.toml
    ARENA_ADMIN_TOKEN=... arena admin pause --url http://127.0.0.1:8080
"""
