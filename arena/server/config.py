"""The competition server's configuration: one frozen value from a TOML file and the flags.

The TOML file (``arena serve --config comp.toml``); every key is optional::

    name = "Spring Hearts Ladder"   # shown on the leaderboard page and in Welcome.message
    players = 4
    rules = "standard"              # a preset; [rule] tweaks it
    hands = 1                       # hands per table; or game_to = 100 for whole games
    seed = 1                        # the ladder's boards derive from it
    move_time = "1s"
    time_bank = "10s"
    handshake = "5s"
    max_faults = 3
    strict = false
    grace = "5s"                    # reconnection grace during a game
    max_sessions = 4                # sessions at once per bot (per token)
    max_message_bytes = 65536
    max_tables = 0                  # tables at once; 0 is no bound
    duplicate = true                # deal each board in every seat rotation
    mix_wait = "60s"                # a table's bots wait this long for others before a rematch
    drain = "30s"                   # on SIGTERM, running tables get this long to finish
    fit_interval = "5s"             # the published fit is recomputed at most this often

    [rule]
    moon = "best"

    [event]                         # a fixed event instead of the continuous ladder
    entrants = ["alpha", "beta", "gamma", "delta"]
    format = "round-robin"          # or "gauntlet" with candidate = "alpha"
    boards = 4
    start = 2025-06-01T18:00:00Z    # TOML date-times; without an offset, UTC
    end = 2025-06-01T22:00:00Z

The competition's identity (:meth:`ServerConfig.identity`) is what decides the meaning of its
results: table size, rules, hands per table, the ladder seed and the event. A database made with
one identity refuses another (the store says what differs); clocks, limits and ports may change
between restarts.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import signal
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.config import (
    MAX_BOARDS,
    MAX_SEED,
    MAX_TABLES,
    by_name,
    check_rule_values,
    load_toml,
    misplaced_note,
    parse_duration_ms,
    rule_names,
    rules_table_note,
    schedule_size,
    toml_spelling,
)
from arena.errors import ArenaError, ConfigError, RulesError
from arena.rules import MAX_PLAYERS, MAX_POINTS, MIN_PLAYERS, STANDARD_PLAYERS, Rules, preset
from arena.server.accounts import check_name
from arena.server.matchmaking import EventFormat, event_schedule
from arena.table import MAX_FAULTS, Clocks, FaultPolicy

__all__ = ["EventConfig", "ServerConfig", "load_server_config"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop the server as a drain (SIGHUP too: a server started in an ssh session
without nohup was killed outright when the session dropped, its running tables later recorded
as crashed)."""

DEFAULT_MAX_SESSIONS = 4
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
DEFAULT_DRAIN_MS = 30_000
DEFAULT_MIX_WAIT_MS = 60_000
DEFAULT_FIT_INTERVAL_MS = 5_000
DEFAULT_NAME = "Hearts Arena ladder"
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest ``max_message_bytes``: gRPC holds its own limit (a few times ours) in a C int."""
MAX_HANDS = 100_000
"""The most hands per table (``hands``)."""
DEFAULT_EVENT_NAME = "Hearts Arena event"
"""A fixed event's name when the config gives none (the ladder's would call it a ladder)."""
MAX_NAME_CHARS = 200
"""The longest competition name (it goes to the page, the log and every bot's Welcome)."""
_CONTROLS = frozenset({"Cc", "Zl", "Zp"})
"""Unicode categories a competition's name may not hold: control characters (C0 and C1: an
escape sequence's ESC, a tab, a line break) and the line and paragraph separators."""

_KEYS = (
    "name",
    "players",
    "rules",
    "rule",
    "hands",
    "game_to",
    "seed",
    "move_time",
    "time_bank",
    "handshake",
    "max_faults",
    "strict",
    "grace",
    "max_sessions",
    "max_message_bytes",
    "max_tables",
    "duplicate",
    "mix_wait",
    "drain",
    "fit_interval",
    "event",
)
_EVENT_KEYS = ("entrants", "format", "candidate", "boards", "start", "end")


@dataclass(frozen=True)
class EventConfig:
    """A fixed event: who plays, in what format, and when."""

    entrants: tuple[str, ...]
    """The bots entered; no other bot may play."""
    format: EventFormat = EventFormat.ROUND_ROBIN
    """Round robin or gauntlet."""
    candidate: str | None = None
    """The gauntlet's candidate."""
    boards: int = 1
    """Deals per combination of entrants, each in every rotation."""
    start: float | None = None
    """When play begins (seconds since the epoch); None: at once."""
    end: float | None = None
    """When no new table starts any more; None: when the schedule is done."""

    def identity(self) -> dict[str, Any]:
        """What decides the event's games."""
        return {
            "entrants": list(self.entrants),
            "format": self.format.value,
            "candidate": self.candidate,
            "boards": self.boards,
        }


@dataclass(frozen=True)
class ServerConfig:
    """Everything ``arena serve`` needs beside the database and the ports."""

    name: str = DEFAULT_NAME
    """Shown on the page and to bots (:data:`DEFAULT_EVENT_NAME` for an event given none)."""
    rules: Rules = field(default_factory=Rules)
    """The rules of every table (``rules.players`` is the table size)."""
    hands: int | None = 1
    """Hands per table; None plays whole games to ``rules.target``."""
    seed: int = 1
    """Seed from which every board's deal derives."""
    clocks: Clocks = field(default_factory=Clocks)
    """Per-move time, time bank, handshake."""
    faults: FaultPolicy = field(default_factory=FaultPolicy)
    """The failure policy."""
    max_sessions: int = DEFAULT_MAX_SESSIONS
    """Sessions at once per bot."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """Largest message a bot may send."""
    max_tables: int | None = None
    """Tables running at once; None is no bound."""
    duplicate: bool = True
    """Deal each ladder board in every seat rotation."""
    mix_wait_ms: int = DEFAULT_MIX_WAIT_MS
    """How long a ladder table's bots, free again, wait for other bots to be free before they
    are seated together again while other tables play (0: they never wait)."""
    drain_ms: int = DEFAULT_DRAIN_MS
    """On SIGTERM, how long running tables get to finish before they are interrupted."""
    fit_interval_ms: int = DEFAULT_FIT_INTERVAL_MS
    """Least time between two published fits."""
    event: EventConfig | None = None
    """A fixed event instead of the ladder."""

    @property
    def players(self) -> int:
        """Seats per table."""
        return self.rules.players

    @property
    def kind(self) -> str:
        """'ladder' or 'event'."""
        return "ladder" if self.event is None else "event"

    def identity(self) -> dict[str, Any]:
        """What gives the stored results their meaning (a database keeps one)."""
        return {
            "kind": self.kind,
            "rules": self.rules.to_dict(),
            "hands": self.hands,
            "seed": self.seed,
            "event": None if self.event is None else self.event.identity(),
        }

    @property
    def run_id(self) -> str:
        """A short hash of :meth:`identity`."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return "serve-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def load_server_config(path: Path | None) -> ServerConfig:
    """The configuration in a TOML file (the defaults when ``path`` is None)."""
    data = load_toml(path) if path is not None else {}
    return server_config_from_dict(data)


def server_config_from_dict(data: Mapping[str, Any]) -> ServerConfig:
    """The configuration from plain data (a parsed TOML file); one-line errors."""
    data = {str(k).replace("-", "_"): v for k, v in data.items()}
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"server config: unknown key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}"
        )
    players = _int(data, "players", STANDARD_PLAYERS)
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ConfigError(
            f"server config: players = {players}; a table has {MIN_PLAYERS} to {MAX_PLAYERS}"
        )
    rules = _rules(data.get("rules"), data.get("rule"), players)
    if "hands" in data and "game_to" in data:
        raise ConfigError("server config: give hands = N or game_to = POINTS, not both")
    hands: int | None = _int(data, "hands", 1)
    if "game_to" in data:
        game_to = _int(data, "game_to", rules.target)
        rule_table = data.get("rule")
        if isinstance(rule_table, Mapping) and "target" in by_name(rule_table, "", "rule"):
            # As `arena run` refuses them: game_to silently won over the [rule] target.
            raise ConfigError(
                f"server config: game_to = {toml_spelling(game_to)} and [rule] target both set "
                "the target: give one of them"
            )
        if not 0 < game_to <= MAX_POINTS:
            # As `arena run --game-to` says it, in the key the file wrote (not rules.target).
            raise ConfigError(
                f"server config: game_to = {game_to}; the target must be 1 to {MAX_POINTS} points"
            )
        try:
            rules = rules.replace(target=game_to)
        except RulesError as e:  # a target the [rule] table's negative points cannot reach safely
            raise ConfigError(f"server config: game_to = {game_to}: {e}") from None
        hands = None
    if hands is not None and not 1 <= hands <= MAX_HANDS:
        # Above what the protocol can tell a bot (GameStarted.max_hands, 32 bits), every table
        # failed as it started (hands = 99999999999).
        raise ConfigError(f"server config: hands = {hands}; give 1 to {MAX_HANDS} hands per table")
    clocks = Clocks(
        move_ms=_ms(data, "move_time", Clocks.move_ms, at_least=1),
        bank_ms=_ms(data, "time_bank", Clocks.bank_ms),
        handshake_ms=_ms(data, "handshake", Clocks.handshake_ms, at_least=1),
    )
    strict = data.get("strict", False)
    if not isinstance(strict, bool):
        raise ConfigError(f"server config: strict = {toml_spelling(strict)}; write true or false")
    max_faults = _int(data, "max_faults", FaultPolicy.max_faults)
    if not 0 <= max_faults <= MAX_FAULTS:
        raise ConfigError(
            f"server config: max_faults = {max_faults}; give 0 to {MAX_FAULTS} (the faults a bot "
            "may make in one game before its seat is forfeited)"
        )
    if strict and "max_faults" in data:
        # Taken and silently overruled: strict mode forfeits a seat at its first fault.
        raise ConfigError(
            f"server config: max_faults = {max_faults} has no effect with strict = true (a seat "
            "is forfeited at its first fault): remove one of them"
        )
    faults = FaultPolicy(
        max_faults=max_faults,
        strict=strict,
        grace_ms=_ms(data, "grace", FaultPolicy.grace_ms),
    )
    max_sessions = _int(data, "max_sessions", DEFAULT_MAX_SESSIONS)
    if max_sessions < 1:
        raise ConfigError(f"server config: max_sessions = {max_sessions}; allow at least 1")
    max_bytes = _int(data, "max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)
    if not 1024 <= max_bytes <= MAX_MESSAGE_BYTES:
        raise ConfigError(
            f"server config: max_message_bytes = {max_bytes}; give 1024 to {MAX_MESSAGE_BYTES}"
        )
    max_tables = _int(data, "max_tables", 0)
    if max_tables < 0:
        raise ConfigError(f"server config: max_tables = {max_tables}; use 0 for no bound")
    seed = _int(data, "seed", 1)
    if not 0 <= seed <= MAX_SEED:
        # As `arena run --seed`: -1 would not mean a random ladder, but another fixed one.
        raise ConfigError(
            f"server config: seed = {seed}; give a whole number from 0 to {MAX_SEED} (2**63 - 1)"
        )
    duplicate = data.get("duplicate", True)
    if not isinstance(duplicate, bool):
        raise ConfigError(
            f"server config: duplicate = {toml_spelling(duplicate)}; write true or false"
        )
    event = _event(data["event"], players) if "event" in data else None
    if event is not None and duplicate is False:
        # Taken and ignored, it promised what an event never does: each board dealt once.
        raise ConfigError(
            "server config: duplicate = false with an [event]: an event deals every board in "
            "every seat rotation (and never shows its tables to spectators); leave duplicate out"
        )
    name = data.get("name", DEFAULT_NAME if event is None else DEFAULT_EVENT_NAME)
    if not isinstance(name, str) or not name.strip():
        quoted = "" if isinstance(name, str) else ' in quotes (name = "Spring Ladder")'
        raise ConfigError(
            f"server config: name = {toml_spelling(name)}; give the competition a name{quoted}"
        )
    name = name.strip()
    if len(name) > MAX_NAME_CHARS:
        # Sent in every Welcome: a name of megabytes made each one too large for a bot to read.
        raise ConfigError(
            f"server config: name is {len(name)} characters long; give one of at most "
            f"{MAX_NAME_CHARS}"
        )
    bad = next((c for c in name if unicodedata.category(c) in _CONTROLS), None)
    if bad is not None:
        # Control characters only: isprintable() refused the ideographic space of a CJK title,
        # a no-break space and an emoji sequence's joiner too.
        raise ConfigError(
            f"server config: name holds {bad.encode('unicode_escape').decode('ascii')}, a "
            "control character (it is shown on the page, in terminals and to bots): remove it"
        )
    return ServerConfig(
        name=name,
        rules=rules,
        hands=hands,
        seed=seed,
        clocks=clocks,
        faults=faults,
        max_sessions=max_sessions,
        max_message_bytes=max_bytes,
        max_tables=max_tables or None,
        duplicate=duplicate,
        mix_wait_ms=_ms(data, "mix_wait", DEFAULT_MIX_WAIT_MS),
        drain_ms=_ms(data, "drain", DEFAULT_DRAIN_MS),
        fit_interval_ms=_ms(data, "fit_interval", DEFAULT_FIT_INTERVAL_MS),
        event=event,
    )


def _int(data: Mapping[str, Any], key: str, default: int, table: str = "") -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        hint = ", not a string: write it without quotes" if isinstance(value, str) else ""
        raise ConfigError(
            f"server config: {table}{key} = {toml_spelling(value)}; expected a whole number{hint}"
        )
    return value


def _ms(data: Mapping[str, Any], key: str, default: int, at_least: int = 0) -> int:
    if key not in data:
        return default
    ms = parse_duration_ms(data[key], f"server config: {key} =")
    if ms < at_least:
        # As `arena run --move-time 0`: a clock of 0 ms would fault every answer.
        raise ConfigError(
            f"server config: {key} = {toml_spelling(data[key])}; give at least {at_least} ms"
        )
    return ms


def _first_note(keys: list[str], table: str) -> str:
    """The note for the first of ``keys`` that is a setting written below ``[table]``."""
    return next((note for k in keys if (note := misplaced_note(k, table, _KEYS))), "")


def _rules(preset_name: Any, options: Any, players: int) -> Rules:
    named: dict[str, Any] = {}
    if preset_name is not None and not isinstance(preset_name, str):
        # str() of it said "rules = True: unknown preset 'True'" (or datetime.date(...)): Python's
        # words for a value the file wrote otherwise.
        raise ConfigError(
            f"server config: rules = {toml_spelling(preset_name)}: expected a preset name in "
            f'quotes, e.g. "standard"{rules_table_note(preset_name)}'
        )
    try:
        base = preset(preset_name) if preset_name is not None else Rules()
        base = base.replace(players=players)
        if options is None:
            return base
        if not isinstance(options, Mapping):
            raise ConfigError("server config: [rule] must be a table of NAME = VALUE")
        # Both spellings of one rule: the later won silently, where `arena run` refuses them.
        named = by_name(options, "server config: [rule]", "rule")
        if "players" in named:
            raise ConfigError("server config: set the table size with players = K, not [rule]")
        for name in named:
            if name not in rule_names():
                raise ConfigError(
                    f"server config: [rule] {name!r} is not a rule; known rules: "
                    f"{', '.join(rule_names())}{misplaced_note(name, 'rule', _KEYS)}"
                )
        check_rule_values(named, "server config: [rule]")
        return base.with_options(named)
    except RulesError as e:
        # Named as the file names it: `rules = ...` or `[rule] NAME`, not the Rules field.
        detail = str(e).removeprefix(f"rules.{e.field}: ")
        if e.field == "preset":
            raise ConfigError(f"server config: rules = {preset_name!r}: {detail}") from None
        if e.field in named:
            raise ConfigError(f"server config: [rule] {e.field}: {detail}") from None
        raise ConfigError(f"server config: {e}") from None


def _when(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return moment.timestamp()
    if isinstance(value, str):
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            # Not a date alone: a date-time in quotes is read as the bare one is.
            try:
                return _when(dt.datetime.fromisoformat(value), key)
            except ValueError:
                pass
        # else a date with no time of day: refused as the bare TOML date is (it was taken as
        # midnight UTC, without a word, where start = 2027-06-01 is refused).
    raise ConfigError(
        f"server config: event.{key} = {toml_spelling(value)}; "
        "write a date-time like 2025-06-01T18:00:00Z"
    )


def _as_written(value: Any, moment: float) -> str:
    """An event time as the file spells it, with the time in UTC after it when the file gave
    another offset (so that two times in different offsets can be compared)."""
    written = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    shown = toml_spelling(value)
    if isinstance(value, dt.datetime) and written.utcoffset() == dt.timedelta(0):
        shown = shown.replace("+00:00", "Z")  # as the file most likely spelt it
    if not written.utcoffset():  # UTC, or no offset (read as UTC)
        return shown
    utc = dt.datetime.fromtimestamp(moment, dt.UTC).isoformat().replace("+00:00", "Z")
    return f"{shown} ({utc})"


def _event(data: Any, players: int) -> EventConfig:
    if not isinstance(data, Mapping):
        raise ConfigError("server config: [event] must be a table")
    data = {str(k).replace("-", "_"): v for k, v in data.items()}
    unknown = sorted(set(data) - set(_EVENT_KEYS))
    if unknown:
        raise ConfigError(
            f"server config: unknown [event] key(s) {', '.join(unknown)}; "
            f"known: {', '.join(_EVENT_KEYS)}{_first_note(unknown, 'event')}"
        )
    entrants = data.get("entrants")
    if not isinstance(entrants, list) or not all(isinstance(e, str) for e in entrants):
        raise ConfigError("server config: event.entrants must be a list of bot names")
    try:
        fmt = EventFormat(data.get("format", EventFormat.ROUND_ROBIN.value))
    except ValueError:
        raise ConfigError(
            f"server config: event.format = {toml_spelling(data.get('format'))}; "
            f"choose {' or '.join(f.value for f in EventFormat)}"
        ) from None
    for name in entrants:
        try:
            check_name(name)
        except ArenaError as e:
            raise ConfigError(f"server config: event.entrants: {e}") from None
    twice = sorted(name for name, count in Counter(entrants).items() if count > 1)
    if twice:
        # Named, and how to fix it (the schedule's check printed the whole list, fixing nothing).
        raise ConfigError(
            f"server config: event.entrants names {', '.join(map(repr, twice))} more than once; "
            "list each bot once"
        )
    folded: dict[str, list[str]] = {}
    for name in entrants:
        folded.setdefault(name.casefold(), []).append(name)
    alike = [names for names in folded.values() if len(names) > 1]
    if alike:
        # Two accounts cannot be spelled alike but for the case (`arena bots add` refuses the
        # second): one of them could never play, and its tables would wait for it.
        raise ConfigError(
            f"server config: event.entrants names {' and '.join(map(repr, alike[0]))}, which "
            "differ only in case: no two accounts can; list each bot once, as `arena bots list` "
            "spells it"
        )
    candidate = data.get("candidate")
    if candidate is not None and not isinstance(candidate, str):
        raise ConfigError(
            f"server config: event.candidate = {toml_spelling(candidate)}; give a bot name"
        )
    if candidate is not None and fmt is not EventFormat.GAUNTLET:
        raise ConfigError(
            f"server config: event.candidate = {candidate!r} only makes sense with "
            f'format = "{EventFormat.GAUNTLET.value}"; remove it or make the event a gauntlet'
        )
    if fmt is EventFormat.GAUNTLET and candidate not in entrants:
        # Said in the file's words (the schedule said "got None" of a candidate left out).
        names = ", ".join(entrants)
        raise ConfigError(
            f'server config: event.format = "gauntlet" needs candidate = NAME, one of the '
            f"entrants ({names})"
            if candidate is None
            else f"server config: event.candidate = {candidate!r} is not one of the entrants "
            f"({names}); add it to them or name one of them"
        )
    event = EventConfig(
        entrants=tuple(entrants),
        format=fmt,
        candidate=candidate,
        boards=_int(data, "boards", 1, "event."),
        start=_when(data.get("start"), "start"),
        end=_when(data.get("end"), "end"),
    )
    if event.start is not None and event.end is not None and event.end <= event.start:
        # Both times shown: "must come after" alone left the mistake (a date, an offset) to find.
        raise ConfigError(
            f"server config: event.end = {_as_written(data['end'], event.end)} is not after "
            f"event.start = {_as_written(data['start'], event.start)}; give an end later than "
            "the start, or leave end out to play the whole schedule"
        )
    if not 1 <= event.boards <= MAX_BOARDS:
        raise ConfigError(f"server config: event.boards = {event.boards}; give 1 to {MAX_BOARDS}")
    # Counted before the schedule is made: a large one would take the memory and the time of
    # every table it lists (boards = 1000000000 hung the start).
    group_count, tables = schedule_size(
        len(set(event.entrants)), players, event.format is EventFormat.GAUNTLET, event.boards
    )
    if tables > MAX_TABLES:
        raise ConfigError(
            f"server config: [event] of {tables} tables ({group_count} groups of {players} x "
            f"{event.boards} boards x {players} rotations); at most {MAX_TABLES}: give "
            "fewer boards or entrants"
        )
    # Validate the schedule now so that a bad event fails at start-up, not at its start time.
    try:
        event_schedule(
            event.entrants,
            players=players,
            boards=event.boards,
            seed=0,
            format=event.format,
            candidate=event.candidate,
        )
    except ConfigError as e:
        raise ConfigError(f"server config: [event]: {e}") from None
    return event
