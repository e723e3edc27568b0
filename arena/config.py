"""The configuration of an `arena run`: one frozen value built from a TOML file and flags.

A :class:`RunConfig` is everything a batch needs. :func:`build_config` merges a TOML file (the
``--config`` flag) with the command-line flags (which win) and validates the result; every problem
is a :class:`~arena.errors.ConfigError` whose message is one line that names the bad input and says
how to fix it, so that the CLI can print it as it is and exit with code 2.

The TOML file holds the same settings as the flags, with the same names (dashes or underscores)::

    players = 4
    rules = "standard"          # a preset
    format = "round-robin"      # or "gauntlet" with candidate = "NAME"
    boards = 10
    game_to = 100               # full games to 100 points instead of single hands
    concurrency = 2
    seed = 7
    move_time = "1s"            # or 1000 (milliseconds) or "500ms"
    time_bank = "10s"
    db = "arena.db"
    out = "arena-out"

    [rule]                      # rule options, as --rule NAME=VALUE
    moon = "best"

    [bots]                      # NAME = COMMAND (a string, split like a shell, or a list)
    mine = "python my_bot.py"
    lowcard = ["python", "sample_bots/lowcard.py"]

The run's identity (:meth:`RunConfig.identity`, :attr:`RunConfig.run_id`) covers exactly what
decides the games played and their results; concurrency, the database path, the output folder and
the port do not change it, so a run may be resumed with other values of those.
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as dt
import errno
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Final

from arena.errors import ConfigError, RulesError
from arena.rules import (
    MAX_PLAYERS,
    MAX_POINTS,
    MIN_PLAYERS,
    PRESETS,
    STANDARD_PLAYERS,
    Rules,
    preset,
)
from arena.store import check_writable, holds_a_competition, is_competition, lookup_failure
from arena.table import (
    DEFAULT_BANK_MS,
    DEFAULT_GRACE_MS,
    DEFAULT_MAX_FAULTS,
    DEFAULT_MOVE_MS,
    MAX_CLOCK_MS,
    MAX_FAULTS,
    MAX_PORT,
    Clocks,
    FaultPolicy,
)
from arena.table import MAX_SEED as TABLE_MAX_SEED
from arena.text import terminal_line

__all__ = [
    "DEFAULT_DB",
    "MAX_SEED",
    "MAX_TABLES",
    "SAMPLE_BOTS",
    "BotSpec",
    "Format",
    "RunConfig",
    "build_config",
    "check_rule_values",
    "check_seed",
    "identity_hash",
    "load_toml",
    "parse_bot",
    "parse_duration_ms",
    "rule_names",
    "sample_bot",
    "schedule_size",
]

DEFAULT_DB = "arena.db"
DEFAULT_BOARDS = 10
DEFAULT_SEED = 1
"""Fixed, so that running the same command twice is the same run (and resumes it)."""
MAX_SEED: Final = TABLE_MAX_SEED
"""The largest seed taken (seeds are 0 to this), a table's: a signed 64-bit integer holds it
(SQLite, protobuf int64), as it holds the board seeds derived from it; numpy's generators (the
ratings' bootstrap) want a seed that is not negative."""
SAMPLE_BOTS = ("random", "lowcard", "heuristic", "montecarlo")
"""The sample bots that play when no ``--bot`` is given (the demo)."""
SAMPLE_BOT_DIR = Path(__file__).resolve().parent.parent / "sample_bots"
_SAMPLE_FILES = {"random": "random_bot.py"}
"""Sample bot files not named after their bot (random.py would hide the standard module)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_DURATION_MS: Final = MAX_CLOCK_MS
"""The longest clock or grace period taken: a day."""
MAX_BOARDS: Final = 100_000
"""The most boards one run takes (its schedule is held in memory)."""
MAX_TABLES: Final = 1_000_000
"""The most tables one run or one server's event schedules (groups x boards x rotations): the
schedule is made, in memory, before the first game (about 0.7 KB a table)."""
_DURATION = re.compile(r"(?P<number>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>ms|s|m)?")
_OTHER_UNIT = re.compile(r"[-+]?\d+(?:\.\d+)?\s*(?P<unit>[a-zµ]+)")
_UNIT_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, None: 1.0}


class Format(Enum):
    """How the bots are paired into tables."""

    ROUND_ROBIN = "round-robin"
    """Every combination of ``players`` bots."""
    GAUNTLET = "gauntlet"
    """The candidate against every combination of ``players - 1`` of the others."""


@dataclass(frozen=True)
class BotSpec:
    """One bot: a unique name and the command line that starts one of its processes."""

    name: str
    """Unique name; it is the bot's identity in tables, results and log file names."""
    argv: tuple[str, ...]
    """The command to execute (never through a shell)."""
    label: str
    """The command as a shell would write its words (what the run's identity hashes and reports
    show): the same command in other quotes or spacing, or as a config file's list, is the same
    run."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the label stands for the command)."""
        return {"name": self.name, "command": self.label}


def sample_bot(name: str) -> BotSpec:
    """The sample bot ``name`` (one of :data:`SAMPLE_BOTS`), run with this Python."""
    file = _SAMPLE_FILES.get(name, f"{name}.py")
    path = SAMPLE_BOT_DIR / file
    # The label is relative so that the run's identity does not depend on where the checkout is.
    return BotSpec(name, (sys.executable, str(path)), f"sample_bots/{file}")


def parse_bot(text: str, flag: str = "--bot") -> BotSpec:
    """A bot from ``NAME=COMMAND`` (the ``--bot`` flag, or ``flag``, which the error names); the
    command is split like a shell does."""
    name, sep, command = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(
            f"{flag} {text!r}: expected NAME=COMMAND, e.g. {flag} mine='python bot.py'"
        )
    return _bot(name, command.strip())


def _bot(name: str, command: str | Sequence[str]) -> BotSpec:
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"bot name {name!r}{name_fault(name)}: use up to 64 ASCII letters, digits, '.', '_' "
            "or '-', starting with a letter or digit (it names the bot's log file)"
        )
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError as e:
            raise ConfigError(f"bot {name!r}: cannot split command {command!r}: {e}") from None
        # A shell expands a word's leading ~ (the README's `python ~/hearts-arena/...`): kept
        # as typed, it named a folder called "~" in the current one.
        argv = tuple(os.path.expanduser(w) if w.startswith("~") else w for w in words)
    else:
        argv = tuple(str(a) for a in command)
    if not argv:
        raise ConfigError(f"bot {name!r}: the command is empty; give NAME=COMMAND")
    # Not the text as typed: `--bot sp='python "my bot.py"'` and the file's ["python", "my
    # bot.py"] were "another run" of each other, and resuming from the other form was refused.
    return BotSpec(name, argv, shlex.join(argv))


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written in UTF-8: an argument in another encoding (a Latin-1
    terminal's "é") comes to Python with lone surrogates, which cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def name_fault(name: str) -> str:
    """What in ``name`` breaks the rule, said after it (" has 'é'"): "letters" alone read as
    allowing 'é', which is one."""
    if len(name) > 64:
        return f" is {len(name)} characters long"
    bad = next((c for c in name if not re.fullmatch(r"[A-Za-z0-9_.-]", c)), None)
    if bad is not None:
        return f" has {bad!r}"
    if name and not name[0].isalnum():
        return f" starts with {name[0]!r}"
    return ""


def toml_spelling(value: Any) -> str:
    """A TOML value as the file spells it (``true``, ``18:00:00``), not as Python does
    (``True``, ``datetime.time(18, 0)``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_spelling(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {toml_spelling(v)}" for k, v in value.items()) + "}"
    return repr(value)


def parse_duration_ms(text: str | int | float, flag: str) -> int:
    """Milliseconds from ``"1000"``, ``1000``, ``"500ms"``, ``"1.5s"`` or ``"2m"``; a bare number
    is milliseconds."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ConfigError(
            f"{flag} {toml_spelling(text)}: expected a duration such as 1000 (ms), 500ms or 1.5s"
        )
    if isinstance(text, int | float):
        if not math.isfinite(text):
            raise ConfigError(f"{flag} {text!r}: give a finite duration such as 1000 (ms) or 1.5s")
        value, unit = float(text), None
    else:
        match = _DURATION.fullmatch(text.strip().lower())
        if match is None:
            other = _OTHER_UNIT.fullmatch(text.strip().lower())
            if other is not None:
                # "2h" was "expected a duration", as if it were no number at all.
                raise ConfigError(
                    f"{flag} {text!r}: {other['unit']!r} is not a unit here: give ms, s or m "
                    "(e.g. 90m for an hour and a half)"
                )
            raise ConfigError(
                f"{flag} {text!r}: expected a duration such as 1000 (ms), 500ms or 1.5s"
            )
        unit = match["unit"]
        value = float(match["number"]) * _UNIT_MS[unit]
    if value < 0:
        raise ConfigError(f"{flag} {text!r}: a duration cannot be negative")
    if value > MAX_DURATION_MS:
        # The protocol carries clocks as 32-bit milliseconds; a day is far beyond any game's need.
        raise ConfigError(f"{flag} {text!r}: at most a day ({MAX_DURATION_MS} ms)")
    if value != int(value):
        # 1.5 was 2 ms, 1.4 was 1, without a word: a bare number is milliseconds, and a user
        # who wrote 1.5 most likely meant seconds.
        hint = f"; did you mean {text}s (seconds)?" if unit is None else ""
        raise ConfigError(f"{flag} {text!r}: a duration is a whole number of milliseconds{hint}")
    return int(value)


@dataclass(frozen=True)
class RunConfig:
    """Everything an `arena run` needs, validated."""

    bots: tuple[BotSpec, ...]
    """The bots, in the order given."""
    rules: Rules
    """The rules (players, preset, --rule options and --game-to already applied)."""
    format: Format = Format.ROUND_ROBIN
    """How bots are grouped into tables."""
    candidate: str | None = None
    """The gauntlet's candidate (a bot name); None for a round robin."""
    boards: int = DEFAULT_BOARDS
    """Deals per table combination; each is played in every seat rotation."""
    game_to: int | None = None
    """Play full games to this many points; None plays single hands."""
    seed: int = DEFAULT_SEED
    """The run's seed: it fixes every deal."""
    clocks: Clocks = field(default_factory=Clocks)
    """Per-move time and per-game bank."""
    faults: FaultPolicy = field(default_factory=FaultPolicy)
    """What the referee does about faults."""
    concurrency: int = 1
    """Tables played at once (not part of the run's identity)."""
    db: Path = Path(DEFAULT_DB)
    """The SQLite database (not part of the identity)."""
    out: Path = Path("arena-out")
    """Folder for replays and bot logs (not part of the identity)."""
    port: int = 0
    """The referee's port on 127.0.0.1; 0 picks a free one (not part of the identity)."""

    @property
    def players(self) -> int:
        """Seats per table."""
        return self.rules.players

    def bot(self, name: str) -> BotSpec:
        """The bot called ``name``."""
        for b in self.bots:
            if b.name == name:
                return b
        raise ConfigError(f"no bot called {name!r}; bots: {', '.join(self.bot_names)}")

    @property
    def bot_names(self) -> tuple[str, ...]:
        """The bot names, in the order given."""
        return tuple(b.name for b in self.bots)

    def identity(self) -> dict[str, Any]:
        """What decides the games and their results, as plain data (hashed into :attr:`run_id`)."""
        return {
            "bots": [b.to_dict() for b in self.bots],
            "rules": self.rules.to_dict(),
            "format": self.format.value,
            "candidate": self.candidate,
            "boards": self.boards,
            "game_to": self.game_to,
            "seed": self.seed,
            "clocks": self.clocks.to_dict(),
            "faults": self.faults.to_dict(),
        }

    @property
    def run_id(self) -> str:
        """A short stable hash of :meth:`identity`: the same configuration is the same run."""
        return identity_hash(self.identity())


def identity_hash(identity: Mapping[str, Any]) -> str:
    """A short stable hash of a run's identity (plain data)."""
    text = json.dumps(dict(identity), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_toml(path: Path) -> dict[str, Any]:
    """The settings in a TOML file, keys normalised to underscores."""
    try:
        text = path.read_bytes()
        if text.startswith(codecs.BOM_UTF8):
            # Invisible in an editor, and tomllib's error points at nothing to see.
            raise ConfigError(
                f"--config {path}: starts with a byte-order mark (as some editors save "
                "UTF-8), which TOML does not allow: save it as UTF-8 without one"
            )
        data = tomllib.loads(text.decode())
    except ConfigError:  # a ValueError too: not to be taken for tomllib's below
        raise
    except FileNotFoundError:
        raise ConfigError(f"--config {path}: no such file") from None
    except OSError as e:
        raise ConfigError(f"--config {path}: cannot read it: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"--config {path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"--config {path}: not UTF-8 text (byte {e.start}), as TOML must be"
        ) from None
    except ValueError:
        # tomllib reads an integer with int(), which refuses one of over 4300 digits (Python's
        # guard against slow conversions): that was a traceback.
        raise ConfigError(
            f"--config {path}: holds a number of more than {sys.get_int_max_str_digits()} "
            "digits, far past any setting's range: fix that value"
        ) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(
            f"--config {path}: arrays or inline tables nested too deep to read (no setting "
            "takes more than a list of words): fix that value"
        ) from None
    nul = _nul_at(data)
    if nul:
        # No path, command or name can hold one: a path's lookup raised (a traceback), and a
        # command's start failed in trio's words.
        raise ConfigError(
            f"--config {path}: {terminal_line(nul)} holds a NUL character (\\u0000), which no "
            "file name, command or name can hold: remove it"
        )
    return by_name(data, f"--config {path}:", "setting")


def _nul_at(value: object, where: str = "") -> str:
    """Where in ``value`` (a parsed TOML file) a string or a key holds a NUL ('' if nowhere)."""
    if isinstance(value, str):
        return where if "\0" in value else ""
    if isinstance(value, dict):
        for key, item in value.items():
            at = f"{where}.{key}" if where else str(key)
            if "\0" in str(key):
                return at
            found = _nul_at(item, at)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _nul_at(item, f"{where}[{i}]")
            if found:
                return found
    return ""


def by_name(table: Mapping[Any, Any], where: str, what: str) -> dict[str, Any]:
    """``table`` keyed by name, a '-' in a key read as '_'; both spellings of one name
    (move-time and move_time) are a :class:`ConfigError` (the last one won silently)."""
    named: dict[str, Any] = {}
    for key, value in table.items():
        name = str(key).replace("-", "_")
        if name in named:
            spellings = " and ".join(str(k) for k in table if str(k).replace("-", "_") == name)
            raise ConfigError(f"{where} {spellings} are one {what}, {name}: give it once")
        named[name] = value
    return named


_FILE_KEYS = (
    "bots",
    "players",
    "rules",
    "rule",
    "format",
    "candidate",
    "boards",
    "game_to",
    "concurrency",
    "seed",
    "move_time",
    "time_bank",
    "db",
    "out",
    "port",
    "max_faults",
    "strict",
    "grace",
)


def _check_faults_with_strict(limit: int, strict_in_file: bool, limit_in_file: bool) -> None:
    """Refuse a fault limit that strict mode overrules (a seat is forfeited at its first
    fault): it was taken and silently ignored. A ``--strict`` flag over a file's limit is the
    flag winning, as flags do."""
    if limit_in_file and not strict_in_file:
        return
    if not limit_in_file and not strict_in_file:
        raise ConfigError(
            f"--max-faults {limit} has no effect with --strict (a seat is forfeited at its "
            "first fault): give one of them"
        )
    if not limit_in_file:
        raise ConfigError(
            f"--max-faults {limit} has no effect: the config file sets strict = true (a seat "
            f"is forfeited at its first fault); add --no-strict to allow {limit}"
        )
    raise ConfigError(
        f"config file: max_faults = {limit} has no effect with strict = true (a seat is "
        "forfeited at its first fault): remove one of them"
    )


def schedule_size(bots: int, players: int, gauntlet: bool, boards: int) -> tuple[int, int]:
    """(groups, tables) of a round robin or gauntlet of ``bots`` at ``players`` seats over
    ``boards`` boards, each in every rotation: counted, not made (a large schedule takes the
    memory and the time of every table it lists)."""
    groups = math.comb(bots - 1, players - 1) if gauntlet else math.comb(bots, players)
    return groups, groups * boards * players


def _check_table_count(bots: int, players: int, fmt: Format, boards: int) -> None:
    """Refuse a schedule of more than :data:`MAX_TABLES` tables, counted before it is made (8
    bots with --boards 100000, 28 million tables, took all the memory with nothing said)."""
    groups, tables = schedule_size(bots, players, fmt is Format.GAUNTLET, boards)
    if tables > MAX_TABLES:
        most = MAX_TABLES // (groups * players)
        fix = f"give --boards {most} or fewer, or fewer bots" if most else "give fewer bots"
        raise ConfigError(
            f"--boards {boards}: {tables:,} tables ({groups:,} groups of {players} bots x "
            f"{boards:,} boards x {players} rotations); a run plays at most {MAX_TABLES:,}: {fix}"
        )


def build_config(
    file: Mapping[str, Any] | None = None,
    *,
    bots: Sequence[str | BotSpec] = (),
    players: int | None = None,
    rules: str | None = None,
    rule: Sequence[str] = (),
    format: str | None = None,
    candidate: str | None = None,
    boards: int | None = None,
    game_to: int | None = None,
    concurrency: int | None = None,
    seed: int | None = None,
    move_time: str | None = None,
    time_bank: str | None = None,
    db: str | Path | None = None,
    out: str | Path | None = None,
    port: int | None = None,
    max_faults: int | None = None,
    strict: bool | None = None,
    grace: str | None = None,
    check_commands: bool = True,
) -> RunConfig:
    """Merge the TOML settings ``file`` with flags (flags win; None means "not given") and validate.

    ``--bot`` flags add bots to the file's, replacing a file bot of the same name; ``--rule`` flags
    apply after the file's ``[rule]`` table. With no bot anywhere, the sample bots play.
    """
    f = dict(file or {})
    unknown = sorted(set(f) - set(_FILE_KEYS))
    if unknown:
        raise ConfigError(
            f"config file: unknown setting(s) {', '.join(unknown)}; known: {', '.join(_FILE_KEYS)}"
        )

    from_file: set[str] = set()

    def pick(name: str, flag: Any) -> Any:
        if flag is None and name in f:
            from_file.add(name)
            return f[name]
        if name in f and name in _CHECKED:
            # Checked though the flag wins: a file that is wrong showed only when run without it.
            try:
                _checked(name, f[name])
            except ConfigError as e:
                raise _from_file(e, {name}) from None
        return flag

    try:
        bot_specs = _merge_bots(f.get("bots"), bots)
        k = _checked("players", pick("players", players))
        the_rules = _rules(pick("rules", rules), f.get("rule"), rule, k)
        points: int | None = _checked("game_to", pick("game_to", game_to))
        if points is not None:
            ruled = [r for r in rule if r.partition("=")[0].strip() == "target"]
            if ruled or "target" in (f.get("rule") or {}):
                raise ConfigError(
                    f"--game-to {points} and a target rule both set the target: give one of them"
                )
            try:
                the_rules = the_rules.replace(target=points)
            except RulesError as e:  # a target the other rules cannot reach safely
                raise ConfigError(f"--game-to {points}: {e}") from None

        fmt: Format = _checked("format", pick("format", format))
        names = tuple(b.name for b in bot_specs)
        cand = _checked("candidate", pick("candidate", candidate), names[0])
        if fmt is not Format.GAUNTLET and format is not None and "candidate" in from_file:
            # `--format round-robin` overrides a gauntlet's file: the file's candidate went with
            # the gauntlet, and no flag could unset it.
            cand = None
        if fmt is Format.GAUNTLET:
            if cand is None:
                # The bots may all be the file's [bots], where "the --bot names" pointed nowhere.
                raise ConfigError(
                    "--format gauntlet needs --candidate NAME (in a config file, "
                    f'candidate = "NAME"), one of the bots: {", ".join(names)}'
                )
            if cand not in names:
                raise ConfigError(f"--candidate {cand!r} is not a bot; bots: {', '.join(names)}")
        elif cand is not None:
            raise ConfigError(f"--candidate {cand!r} only makes sense with --format gauntlet")
        if len(bot_specs) < k:
            raise ConfigError(
                f"{len(bot_specs)} bot(s) ({', '.join(names)}) for {k}-player tables: "
                f"give at least {k} with --bot NAME=COMMAND, or play --players {len(bot_specs)}"
                if len(bot_specs) >= MIN_PLAYERS
                else f"{len(bot_specs)} bot(s) ({', '.join(names)}) for {k}-player tables: "
                f"give at least {k} with --bot NAME=COMMAND"
            )

        n_boards = _checked("boards", pick("boards", boards))
        _check_table_count(len(names), k, fmt, n_boards)
        workers = _checked("concurrency", pick("concurrency", concurrency))
        the_seed = _checked("seed", pick("seed", seed))
        move_ms = _checked("move_time", pick("move_time", move_time))
        bank_ms = _checked("time_bank", pick("time_bank", time_bank))
        given_faults = pick("max_faults", max_faults)
        fault_limit = _checked("max_faults", given_faults)
        strict_mode = _checked("strict", pick("strict", strict))
        if strict_mode and given_faults is not None:
            _check_faults_with_strict(fault_limit, "strict" in from_file, "max_faults" in from_file)
        grace_ms = _checked("grace", pick("grace", grace))
        the_port = _checked("port", pick("port", port))
        db_path: Path = _checked("db", pick("db", db))
        out_value = _path_text("--out", pick("out", out))
        if out_value is not None and not str(out_value).strip():
            # `--out ""` over a file's `out` named the built-in default, not the file's folder.
            file_out = f.get("out") if out is not None and "out" in f else None
            fallback = (
                f"the config file's ({file_out})"
                if isinstance(file_out, str) and file_out.strip()
                else f"the default ({_default_out(db_path)})"
            )
            raise ConfigError(
                f"--out {str(out_value)!r}: give a folder, or leave --out out for {fallback}"
            )
        out_path = Path(out_value) if out_value is not None else _default_out(db_path)
        _check_folder("--out", out_path)
        _check_apart(db_path, out_path)
        _check_not_a_competition(db_path)
        if check_commands:
            for b in bot_specs:
                _check_command(b)
        return RunConfig(
            bots=bot_specs,
            rules=the_rules,
            format=fmt,
            candidate=cand,
            boards=n_boards,
            game_to=points,
            seed=the_seed,
            clocks=Clocks(move_ms=move_ms, bank_ms=bank_ms),
            faults=FaultPolicy(max_faults=fault_limit, strict=bool(strict_mode), grace_ms=grace_ms),
            concurrency=workers,
            db=db_path,
            out=out_path,
            port=the_port,
        )
    except ConfigError as e:
        raise _from_file(e, from_file) from None


_CHECKED: Final = (
    "players",
    "game_to",
    "boards",
    "concurrency",
    "seed",
    "move_time",
    "time_bank",
    "max_faults",
    "strict",
    "grace",
    "port",
    "db",
    "rules",
    "format",
    "candidate",
    "out",
)
"""The settings :func:`_checked` reads: a config file's is checked even where a flag wins."""


def _checked(name: str, value: Any, example: str = "mybot") -> Any:
    """A setting's value (None: not given, the default) read and checked as its flag is, or a
    :class:`ConfigError` in the flag's name (:func:`_from_file` names the file's key);
    ``example``: a bot's name the candidate's message may show."""
    flag = "--" + name.replace("_", "-")
    if name == "players":
        k = _int(flag, value, STANDARD_PLAYERS)
        if not MIN_PLAYERS <= k <= MAX_PLAYERS:
            raise ConfigError(f"{flag} {k}: a table has {MIN_PLAYERS} to {MAX_PLAYERS} players")
        return k
    if name == "game_to":
        if value is None:
            return None
        points = _int(flag, value, 0)
        if not 0 < points <= MAX_POINTS:
            raise ConfigError(f"{flag} {points}: the target must be 1 to {MAX_POINTS} points")
        return points
    if name == "boards":
        n_boards = _int(flag, value, DEFAULT_BOARDS)
        if not 1 <= n_boards <= MAX_BOARDS:
            raise ConfigError(f"{flag} {n_boards}: give 1 to {MAX_BOARDS} boards")
        return n_boards
    if name == "concurrency":
        workers = _int(flag, value, os.cpu_count() or 1)
        if workers < 1:
            raise ConfigError(f"{flag} {workers}: play at least 1 table at a time")
        return workers
    if name == "seed":
        the_seed = _int(flag, value, DEFAULT_SEED)
        check_seed(flag, the_seed)
        return the_seed
    if name == "move_time":
        move_ms = _duration(flag, value, DEFAULT_MOVE_MS)
        if move_ms < 1:
            raise ConfigError(f"{flag} {value}: give each move at least 1 ms")
        return move_ms
    if name == "time_bank":
        return _duration(flag, value, DEFAULT_BANK_MS)
    if name == "max_faults":
        limit = _int(flag, value, DEFAULT_MAX_FAULTS)
        if not 0 <= limit <= MAX_FAULTS:
            raise ConfigError(f"{flag} {limit}: give 0 to {MAX_FAULTS} faults per game")
        return limit
    if name == "strict":
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"{flag} {toml_spelling(value)}: expected true or false")
        return value
    if name == "grace":
        return _duration(flag, value, DEFAULT_GRACE_MS)
    if name == "port":
        the_port = _int(flag, value, 0)
        check_port(flag, the_port)
        return the_port
    if name == "rules":
        if value is not None and not isinstance(value, str):
            raise ConfigError(
                f"{flag} {toml_spelling(value)}: expected a preset name in quotes, "
                f'e.g. "standard"{rules_table_note(value)}'
            )
        if value is not None and value not in PRESETS:
            raise ConfigError(f"{flag} {value!r}: not a preset; choose one of {', '.join(PRESETS)}")
        return value
    if name == "format":
        if value is not None and not isinstance(value, str):
            # str() made `format = 3` read "format = '3'", a string the file does not hold.
            raise ConfigError(
                f"{flag} {toml_spelling(value)}: expected a format name in quotes, "
                'e.g. "round-robin"'
            )
        # Only an absent setting takes the default: an empty one is a mistake to name.
        text = Format.ROUND_ROBIN.value if value is None else str(value)
        try:
            return Format(text)
        except ValueError:
            raise ConfigError(
                f"{flag} {text!r}: choose one of {', '.join(x.value for x in Format)}"
            ) from None
    if name == "candidate":
        if value is not None and not isinstance(value, str):
            # Said as the file spells it: `candidate = true` read "candidate = True is not a
            # bot", a value the file does not hold, and not that a name goes in quotes.
            raise ConfigError(
                f'{flag} {toml_spelling(value)}: expected a bot\'s name in quotes, e.g. "{example}"'
            )
        if value is not None and (not value or name_fault(value)):
            # No bot is so named, whichever bots play (checked also where a flag wins).
            fault = name_fault(value) or " is empty"
            raise ConfigError(f"{flag} {value!r}: not a bot's name (it{fault})")
        return value
    if name == "out":
        # Only what a folder setting must be whatever else is given (see build_config for a
        # blank --out's own words).
        out_value = _path_text(flag, value)
        if out_value is not None and not str(out_value).strip():
            raise ConfigError(f"{flag} {str(out_value)!r}: give a folder")
        return out_value
    assert name == "db", name
    db_value = _path_text(flag, value)
    if db_value is not None and not str(db_value).strip():
        # Spaces alone too: `--db " "` made a database named by a space, unseen in `ls`.
        raise ConfigError(f"{flag} {str(db_value)!r}: give a database file, e.g. --db arena.db")
    db_path = Path(db_value or DEFAULT_DB)
    _looked_up(flag, db_path)
    if not db_path.name:
        raise ConfigError(f"{flag} {db_path}: is a folder, not a database file")
    _check_folder(flag, db_path.parent, db_path)  # names a file on the way
    # Here, not only when the run opens it: a bad `db` from a config file was named `--db`.
    check_writable(db_path)
    return db_path


def check_port(flag: str, port: int) -> None:
    """Refuse a port number no socket can have (0 asks for any free one)."""
    if not 0 <= port <= MAX_PORT:
        raise ConfigError(f"{flag} {port}: a port is 0 (any free one) to {MAX_PORT}")


def check_seed(flag: str, seed: int) -> None:
    """Refuse a seed outside 0 to :data:`MAX_SEED`.

    Elsewhere -1 (or any negative) often asks for a random seed; here every seed deals fixed cards,
    so taking it silently would give the user a run other than the one they meant.
    """
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(
            f"{flag} {seed}: a seed is a whole number from 0 to {MAX_SEED} (2**63 - 1); "
            "the same seed always deals the same cards"
        )


def _duration(flag: str, value: str | int | float | None, default: int) -> int:
    # Only an absent setting takes the default: a file's `time_bank = 0` is a bank of 0 ms.
    return parse_duration_ms(default if value is None else value, flag)


def _path_text(flag: str, value: Any) -> str | Path | None:
    """A path setting as given (a config file may hold a number or a list by mistake)."""
    if value is None or isinstance(value, str | Path):
        return value
    # As the file spells it: `db = true` said "True", a date "datetime.date(...)".
    raise ConfigError(f"{flag} {toml_spelling(value)}: expected a path (a string)")


def _check_folder(flag: str, folder: Path, given: Path | None = None) -> None:
    """Refuse a folder that cannot be made or written (before any game, not in the middle);
    ``given``: the path the flag was given, where ``folder`` is its parent (a database's)."""
    existing = folder
    while not _looked_up(flag, existing) and existing != existing.parent:
        existing = existing.parent
    # Named as given: `--db ro.db` was refused as "--db .: . is not writable".
    shown = folder if given is None else given
    if not existing.is_dir():
        what = "is a file" if existing == shown else f"{existing} is a file"
        raise ConfigError(f"{flag} {shown}: {what}; give a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{flag} {shown}: {existing} is not writable; give a folder you can write"
        )


def _looked_up(flag: str, path: Path) -> bool:
    """Whether ``path`` exists; a path the system cannot look up at all (a name too long, a folder
    on the way that may not be searched, a loop of links) is a :class:`ConfigError` naming
    ``flag``."""
    why = lookup_failure(path)
    if why is not None:
        raise ConfigError(f"{flag} {path}: cannot look it up: {why}")
    return path.exists()


def _check_apart(db: Path, out: Path) -> None:
    """Refuse an output folder that is the database file or lies inside it: the run would make a
    folder where its database goes (a database inside the output folder is fine)."""
    db_at, out_at = db.resolve(), out.resolve()
    if out_at == db_at:
        where = "is the --db path"
    elif out_at in sidecars(db_at):
        # SQLite's own file beside the database: a folder there failed the run's first write
        # ("disk I/O error") and then its clean-up, in a traceback.
        where = f"is where SQLite keeps a file of the --db {db}"
    elif db_at in out_at.parents:
        where = f"lies inside the --db path {db}"
    else:
        return
    raise ConfigError(
        f"--out {out}: {where}; give the replays and logs a folder of their own "
        f"(default: {_default_out(db)})"
    )


def sidecars(db: Path) -> tuple[Path, ...]:
    """The files SQLite keeps beside database ``db`` (its journal, write-ahead log and index)."""
    return tuple(db.with_name(db.name + suffix) for suffix in ("-journal", "-wal", "-shm"))


def _check_not_a_competition(db: Path) -> None:
    """Refuse the database of ``arena serve``'s competition (its bot accounts, its secret).

    A competition's first games are its runs: until then, nothing else tells a batch it is not
    its own, and a batch written into it made ``arena serve`` and every ``arena bots`` command
    refuse it from then on ("holds a batch run"), the organiser's accounts with it.
    """
    if not db.is_file() or db.stat().st_size == 0:
        return
    # As `arena bots` looks for a batch's runs.
    if is_competition(db):
        raise ConfigError(holds_a_competition(db))


def _from_file(error: ConfigError, from_file: set[str]) -> ConfigError:
    """The error, naming the config file's setting where the bad value came from the file."""
    flag, _, rest = str(error).partition(" ")
    key = flag.removeprefix("--").replace("-", "_")
    if flag.startswith("--") and key in from_file:
        return ConfigError(f"config file: {key} = {rest}")
    return error


def _default_out(db: Path) -> Path:
    # arena.db -> arena-out, next to the database, so that two databases never share replays.
    return db.with_name(f"{db.stem}-out")


def _int(flag: str, value: Any, default: int) -> int:
    # A flag comes typed from typer; a file's value must be a TOML integer: `boards = "3"` was
    # taken as 3, where a string is a mistake to name (as a duration's or a path's type is).
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{flag} {toml_spelling(value)}: expected a whole number{_not_kind(value)}")


def _not_kind(value: Any) -> str:
    """Why a TOML value of another type is not the number or boolean it should be ('' if the
    value shows it)."""
    if isinstance(value, str):
        return ", not a string: write it without quotes"
    if isinstance(value, bool):
        return ", not true or false"
    return ""


_RULE_KINDS: Final = {f.name: str(f.type) for f in dataclasses.fields(Rules)}
"""Each rules option's annotation ("int", "bool", "int | None", ...): its TOML value's type."""
_NO_VALUE = ("none", "default")
"""The words that leave an optional rules number (moon_points) unset: TOML has no null."""


def check_rule_values(options: Mapping[str, Any], where: str) -> None:
    """Refuse a ``[rule]`` value of another TOML type than its option's (``where`` starts the
    message): the rules parse text, as ``--rule`` gives it, so ``queen_penalty = "13"`` and
    ``kitty = "yes"`` were taken, where ``boards = "3"`` is refused."""
    for name, value in options.items():
        kind = _RULE_KINDS.get(name)
        said = f"{where} {name} = {toml_spelling(value)}"
        if kind == "bool" and not isinstance(value, bool):
            raise ConfigError(f"{said}: expected true or false (without quotes)")
        if kind == "int | None" and str(value).lower() in _NO_VALUE:
            continue
        number = isinstance(value, int) and not isinstance(value, bool)
        if kind in ("int", "int | None") and not number:
            raise ConfigError(f"{said}: expected a whole number{_not_kind(value)}")


def rules_table_note(value: Any) -> str:
    """What to say of a ``rules`` setting that is a table: the options go in ``[rule]``."""
    if isinstance(value, Mapping):
        return " (a rules table of NAME = VALUE options is [rule], without the s)"
    return ""


def misplaced_note(key: str, table: str, settings: Sequence[str]) -> str:
    """What to say of a key read under ``[table]`` that is a top-level setting: TOML puts every
    key after a ``[table]`` line in that table, so a setting written below it landed there."""
    if key.replace("-", "_") not in settings:
        return ""
    return (
        f" ({key} is a setting: TOML puts every key after the [{table}] line in [{table}], so "
        f"write it above that line)"
    )


def _merge_bots(file_bots: Any, flags: Sequence[str | BotSpec]) -> tuple[BotSpec, ...]:
    merged: dict[str, BotSpec] = {}
    if file_bots is not None:
        if not isinstance(file_bots, Mapping):
            raise ConfigError(
                "config file: [bots] must be a table of NAME = COMMAND, "
                f"got {type(file_bots).__name__}"
            )
        for name, command in file_bots.items():
            misplaced = misplaced_note(str(name), "bots", _FILE_KEYS)
            if misplaced:
                # `move_time = "500ms"` below [bots] was a bot named move_time, refused for
                # its command ("500ms" not found on PATH), far from the cause.
                raise ConfigError(
                    f"config file: bots.{name} = {toml_spelling(command)} is read as a bot"
                    f"{misplaced}; a bot of that name: call it something else"
                )
            if isinstance(command, Mapping) and command:
                # A bare key is split at its dots: `bot.v2 = "..."` is bots.bot = {v2 = "..."},
                # and "bots.bot must be a command string" named a bot nobody wrote.
                dotted = ".".join(_first_path(name, command))
                raise ConfigError(
                    f"config file: bots.{name} is a table, not a command: TOML splits a bare "
                    f"key at each '.', so for a bot named {dotted} write \"{dotted}\" = "
                    f'"COMMAND" under [bots], in quotes (for a bot named {name}: {name} = '
                    '"COMMAND")'
                )
            if not isinstance(command, str | list) or (
                isinstance(command, list) and not all(isinstance(a, str) for a in command)
            ):
                raise ConfigError(
                    f"config file: bots.{name} must be a command string or a list of strings"
                )
            merged[name] = _bot(str(name), command)
    seen: set[str] = set()
    for text in flags:
        spec = text if isinstance(text, BotSpec) else parse_bot(text)
        if spec.name in seen:
            raise ConfigError(f"--bot {spec.name!r} is given twice; bot names must be unique")
        seen.add(spec.name)
        merged[spec.name] = spec
    if not merged:
        return tuple(sample_bot(name) for name in SAMPLE_BOTS)
    return tuple(merged.values())


def _first_path(key: str, value: Any) -> list[str]:
    """The keys down to the first leaf of nested tables (``bot``, ``{v2: ...}`` gives
    ``["bot", "v2"]``): the name a dotted bare key was meant to be."""
    path = [str(key)]
    while isinstance(value, Mapping) and value:
        key, value = next(iter(value.items()))
        path.append(str(key))
    return path


def rule_names() -> tuple[str, ...]:
    """The rules options a ``--rule`` or ``[rule]`` may set (the table size has its own setting)."""
    return tuple(sorted(f.name for f in dataclasses.fields(Rules) if f.name != "players"))


def _rules(preset_name: Any, file_rule: Any, flag_rules: Sequence[str], players: int) -> Rules:
    preset_name = _checked("rules", preset_name)
    start = preset(preset_name) if preset_name is not None else Rules()
    chosen: dict[str, Any] = {"players": players}  # every option set, for one application
    try:
        base = start.replace(players=players)
        if file_rule is not None:
            if not isinstance(file_rule, Mapping):
                raise ConfigError("config file: [rule] must be a table of NAME = VALUE")
            options = by_name(file_rule, "config file: [rule]", "rule")
            if "players" in options:
                raise ConfigError("config file: set the table size with players = K, not [rule]")
            for name in options:
                if name not in rule_names():
                    raise ConfigError(
                        f"config file: [rule] {name!r} is not a rule; known rules: "
                        f"{', '.join(rule_names())}{misplaced_note(name, 'rule', _FILE_KEYS)}"
                    )
            check_rule_values(options, "config file: [rule]")
            try:
                base = base.with_options(options)
            except RulesError as e:
                # As the file names it: `[rule] moon`, not the Rules field `rules.moon`.
                if not e.field:
                    raise ConfigError(f"config file: [rule] {e}") from None
                detail = str(e).removeprefix(f"rules.{e.field}: ")
                raise ConfigError(f"config file: [rule] {e.field}: {detail}") from None
            chosen.update(options)
        given: dict[str, str] = {}
        for text in flag_rules:
            name, sep, _ = text.partition("=")
            key = name.strip().replace("-", "_")
            if not sep or not key:
                raise ConfigError(f"--rule {text!r}: expected NAME=VALUE, e.g. --rule moon=best")
            if key in given:
                # The last would win without a word, as a repeated single-valued flag would.
                raise ConfigError(
                    f"--rule {given[key]!r} and --rule {text!r} set the same rule: give it once"
                )
            given[key] = text
            if key == "players":
                raise ConfigError(f"--rule {text!r}: set the table size with --players K")
            if key not in rule_names():
                raise ConfigError(
                    f"--rule {text!r}: {key!r} is not a rule; known rules: "
                    f"{', '.join(rule_names())}"
                )
        base.with_options(list(flag_rules))  # checked on their own first, to name the flag
        chosen.update({key: text.partition("=")[2] for key, text in given.items()})
    except RulesError as e:
        raise ConfigError(f"--rule: {e}") from None
    # Then every option at once. Applied one source after the other, a value equal to the
    # default of its moment (moon_points = 26 in the file) was kept as "the default", and moved
    # with a later option (--rule spot_hearts=true made the moon 117, not the 26 the file set).
    try:
        return start.with_options(chosen)
    except RulesError as e:  # the file's value and a flag's contradict each other
        raise ConfigError(f"config file: [rule] with --rule: {e}") from None


LOCAL_ONLY_UNSET: Final = ("ARENA_TLS", "ARENA_TLS_CA", "ARENA_TLS_CERT", "ARENA_TLS_KEY")
"""The SDK's TLS variables, left out of the environment of bots that arena starts for its own
referee (plain text on 127.0.0.1): exported for a competition, they made every bot of a local
batch refuse the plain port and the batch fail."""


def bot_environment(**arena: str) -> dict[str, str]:
    """This process's environment for a bot arena starts: its PATH (:func:`bot_path`), no
    TLS variables, and the ``ARENA_*`` values given."""
    env = {k: v for k, v in os.environ.items() if k not in LOCAL_ONLY_UNSET}
    env["PATH"] = bot_path()
    env.update(arena)
    return env


def bot_path() -> str:
    """The PATH bot commands are found on and run with: this Python's folder first when it runs
    in a virtual environment, then the PATH arena was started with."""
    path = os.environ.get("PATH", os.defpath)
    if sys.prefix == sys.base_prefix:
        return path
    # So that `python` in a bot command (as the README writes them) is the Python arena is
    # installed in, with the SDK importable, whether or not the user activated the environment.
    return os.pathsep.join([str(Path(sys.executable).parent), path])


def is_path(program: str) -> bool:
    """Whether a command's program is a path (run as it is) rather than a name looked up on PATH."""
    return os.sep in program or bool(os.altsep and os.altsep in program)


ERROR_SCAN_LINES = 40
"""How many of a bot's last lines of output are searched for an error to quote when it exits."""
_ERROR_LINE = re.compile(
    r"^\s*[\w.]*(?:Error|Exception|Exit|Interrupt)\b|^arena\.client: |\b(?:ERROR|CRITICAL)\b"
)


QUOTED_CHARS = 500
"""The most of one line of a bot's output that arena quotes."""


def shortened(line: str) -> str:
    """``line`` cut to :data:`QUOTED_CHARS` ("…" where cut): a bot's 2 MB debug line quoted
    whole made an error line of 2 MB."""
    return line if len(line) <= QUOTED_CHARS else line[: QUOTED_CHARS - 1] + "…"


def is_error_line(line: str) -> bool:
    """Whether a line of a bot's output says why it failed: an exception's last traceback line
    (Python's, Node.js's ``Error: ...``), the Python SDK's fatal line, or a log line of level
    ERROR."""
    return _ERROR_LINE.search(line) is not None


def start_failure(error: OSError) -> str:
    """Why a bot's program could not be started, in words that say what to do: an executable
    script without a ``#!`` line failed as a bare "Exec format error"."""
    why = error.strerror or str(error)
    if error.errno == errno.ENOEXEC:
        why += (
            " (the system cannot run the file itself: give a script a #! line, e.g. "
            "#!/usr/bin/env python3, or start it with its interpreter: python FILE)"
        )
    elif error.errno == errno.ENOENT and isinstance(error.filename, str):
        # The file is there (its command was checked): what is missing is the interpreter its
        # #! line names, and "No such file or directory" sent the user to the script.
        interpreter = _shebang(error.filename)
        if interpreter is not None and interpreter.endswith("\r"):
            why += f" ({_CRLF})"
        elif interpreter is not None:
            why += (
                f" (the interpreter its #! line names, {interpreter!r}, does not exist: fix that "
                "line, e.g. #!/usr/bin/env python3, or start it with its interpreter)"
            )
    return why


_CRLF = (
    "its #! line ends in a carriage return: the file has Windows line endings (CRLF); convert "
    "it to Unix ones (LF), e.g. with dos2unix FILE or sed -i 's/\\r$//' FILE"
)


def _shebang_line(path: str) -> bytes | None:
    """The ``#!`` line of an existing file, line break included, or None."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    return first if first.startswith(b"#!") else None


def _shebang(path: str) -> str | None:
    """The interpreter the ``#!`` line of an existing file names (a carriage return that ends
    the line kept), or None."""
    first = _shebang_line(path)
    if first is None:
        return None
    # Only the line break and the spaces around the words go: "/bin/sh\r" is what the system
    # looked for, and "/bin/sh" (which exists) was named as missing.
    words = first[2:].rstrip(b"\n").strip(b" \t").decode(errors="replace").split(" ")
    return words[0] or None


def crlf_note(program: str) -> str:
    """'; its #! line ends in a carriage return ...' when the bot's program is a script saved
    with Windows line endings (what an exit 126 or 127 at once then means), else ''."""
    path = program if is_path(program) else shutil.which(program, path=bot_path())
    first = None if path is None else _shebang_line(path)
    return f"; {_CRLF}" if first is not None and first.endswith(b"\r\n") else ""


def command_problem(program: str) -> str | None:
    """Why a bot command's program cannot be started ("command 'x' does not exist"), or None."""
    if is_path(program):
        path = Path(program)
        why = lookup_failure(path)
        if why is not None:
            return f"command {program!r} cannot be looked up: {why}"
        if not path.exists():
            return f"command {program!r} does not exist"
        if path.is_dir():
            return f"command {program!r} is a folder: give the program inside it"
        if not os.access(path, os.X_OK):
            return (
                f"command {program!r} is not executable: chmod +x it, or start it with its "
                "interpreter (python FILE)"
            )
        return None
    if shutil.which(program, path=bot_path()) is None:
        return f"command {program!r} is not found on PATH"
    return None


def _check_command(bot: BotSpec) -> None:
    problem = command_problem(bot.argv[0])
    if problem is not None:
        raise ConfigError(f"bot {bot.name!r}: {problem}")
