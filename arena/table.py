"""The table API as plain data: what a table is asked to play, and the full record of what happened.

A table is the unit of work (see DESIGN.md): its inputs (:class:`TableSpec`: rules, seed, seats,
clocks, failure policy) and its output (:class:`GameRecord`: the deal, every decision with its
timing, every fault, the result) are small frozen values that round-trip through JSON with
``to_dict()`` / ``from_dict()``, so that a director can hand tables to workers on other machines
and store their results without knowing anything of gRPC.

Every way a game or a seat can end has a name (:class:`Termination`) and every way a bot can
misbehave has a name (:class:`FaultKind`); the referee writes the human-readable sentence once,
into :attr:`Fault.detail` and :attr:`GameRecord.reason`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from arena.errors import ArenaError, ConfigError
from arena.rules import Rules, rules_example

__all__ = [
    "Clocks",
    "Decision",
    "Fault",
    "FaultKind",
    "FaultPolicy",
    "GameRecord",
    "HandRecord",
    "LateReply",
    "TableSpec",
    "Termination",
    "TrickRecord",
]

DEFAULT_MOVE_MS = 1000
DEFAULT_BANK_MS = 10_000
DEFAULT_HANDSHAKE_MS = 5000
DEFAULT_MAX_FAULTS = 3
DEFAULT_GRACE_MS = 5000
MAX_CLOCK_MS = 86_400_000
"""The longest clock or grace period a table takes: a day, as ``arena run`` and ``arena serve``
take (``arena.config.MAX_DURATION_MS``). The protocol carries them in 32 bits: a longer one
failed the game as it started (``GameStarted``'s clocks) or at a reconnect (``Welcome``)."""
MAX_PORT = 65535
"""TCP's largest port (kept here, with the other limits, so that a bot process gets it without
the run config and the store that arena.config brings in)."""
MAX_FAULTS = 2**32 - 1
"""The most faults a policy may tolerate: ``FaultNotice.faults_allowed`` carries it in 32 bits
(a larger one failed the game at its first fault)."""
MAX_SEED = 2**63 - 1
"""The largest seed a table takes, as ``arena run --seed`` and the engine do: a store keeps it as
a signed 64-bit integer."""
_DAY = " (ms: at most a day)"
_T = TypeVar("_T")


def _in_range(owner: str, name: str, value: object, low: int, top: int, unit: str = "") -> None:
    """Refuse a value that is not a whole number from ``low`` to ``top`` (``unit`` says what)."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= top:
        raise ConfigError(
            f"{owner}.{name} must be a whole number from {low} to {top}{unit}, got {value!r}"
        )


def _known(owner: str, data: Mapping[str, Any], names: Sequence[str]) -> None:
    """Refuse ``data`` that is no mapping, or that has a field not in ``names`` (a ConfigError)."""
    # Read as it was, None raised a bare TypeError ("not iterable"), a list of numbers another
    # (from the join), and a string was taken apart letter by letter into unknown fields.
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{owner}: expected a mapping of fields ({', '.join(names)}), got {data!r:.80}"
        )
    unknown = sorted(str(name) for name in set(data) - set(names))
    if unknown:
        raise ConfigError(
            f"{owner}: unknown field(s) {', '.join(unknown)}; known: {', '.join(names)}"
        )


def _whole(what: str, read: Callable[[Mapping[str, Any]], _T], data: Mapping[str, Any]) -> _T:
    """``read(data)``, with a missing field or a bad value said in one line (not a bare
    KeyError, or a ValueError from ``int("abc")`` that names no field)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"not a {what}: expected a mapping of fields, got {data!r:.80}")
    try:
        return read(data)
    except KeyError as e:
        raise ConfigError(f"not a whole {what}: no field {e.args[0]!r}") from None
    except ArenaError:  # already says what is wrong, and where
        raise
    except (ValueError, TypeError, AttributeError) as e:
        raise ConfigError(f"not a valid {what}: {e}") from None


# Readers of a record's fields: a value of another JSON type is refused, naming the field, as
# TableSpec refuses a seed of "55". int(), float(), bool() and tuple() read a record's totals of
# [34.9, "8"] as (34, 8), forced "false" as True and cards "QS" as ("Q", "S").


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data[key]
    if type(value) is not int:
        raise ValueError(f"{key} must be a whole number, got {value!r:.40}")
    return value


def _ints(data: Mapping[str, Any], key: str) -> tuple[int, ...]:
    values = data[key]
    if not isinstance(values, list | tuple) or any(type(v) is not int for v in values):
        raise ValueError(f"{key} must be a list of whole numbers, got {values!r:.60}")
    return tuple(values)


def _real(data: Mapping[str, Any], key: str) -> float:
    value = data[key]
    if type(value) not in (int, float):
        raise ValueError(f"{key} must be a number, got {value!r:.40}")
    return float(value)


def _flag(data: Mapping[str, Any], key: str, default: bool | None = None) -> bool:
    value = data.get(key, default) if default is not None else data[key]
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r:.40}")
    return value


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text, got {value!r:.40}")
    return value


def _codes(
    data: Mapping[str, Any], key: str, default: Sequence[str] | None = None
) -> tuple[str, ...]:
    values = data.get(key, default) if default is not None else data[key]
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key} must be a list of card codes, got {values!r:.60}")
    return tuple(values)


def _card_lists(data: Mapping[str, Any], key: str) -> tuple[tuple[str, ...], ...]:
    lists = data[key] or ()  # None: no passes, in records of old
    if not isinstance(lists, list | tuple):
        raise ValueError(f"{key} must be a list of lists of card codes, got {lists!r:.60}")
    return tuple(_codes({key: cards}, key) for cards in lists)


@dataclass(frozen=True)
class Clocks:
    """The clocks of a table, in milliseconds of the referee's monotonic clock."""

    move_ms: int = DEFAULT_MOVE_MS
    """Time a seat has for one decision before its time bank starts to run."""
    bank_ms: int = DEFAULT_BANK_MS
    """Per-game reserve, spent by whatever part of a decision runs past ``move_ms``."""
    handshake_ms: int = DEFAULT_HANDSHAKE_MS
    """Time a new stream has to say Hello, and a table waits for a seat's bot to be in the lobby."""

    def __post_init__(self) -> None:
        # move_ms from 1, as `arena run --move-time` and `arena serve` take it: a request due
        # as it was sent (0 ms, no bank) had every bot's session cut while it was written.
        _in_range("clocks", "move_ms", self.move_ms, 1, MAX_CLOCK_MS, _DAY)
        _in_range("clocks", "bank_ms", self.bank_ms, 0, MAX_CLOCK_MS, _DAY)
        _in_range("clocks", "handshake_ms", self.handshake_ms, 0, MAX_CLOCK_MS, _DAY)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {"move_ms": self.move_ms, "bank_ms": self.bank_ms, "handshake_ms": self.handshake_ms}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Clocks:
        """The clocks from :meth:`to_dict` output."""
        _known("clocks", data, ("move_ms", "bank_ms", "handshake_ms"))
        return cls(**dict(data))


@dataclass(frozen=True)
class FaultPolicy:
    """What the referee does about faults and disconnects."""

    max_faults: int = DEFAULT_MAX_FAULTS
    """Faults a seat may commit in one game; one more and the fallback plays it (a forfeit)."""
    strict: bool = False
    """Forfeit the seat at its first fault."""
    grace_ms: int = DEFAULT_GRACE_MS
    """How long a disconnected seat may take to reconnect before it is forfeited."""

    def __post_init__(self) -> None:
        _in_range("faults", "max_faults", self.max_faults, 0, MAX_FAULTS)
        _in_range("faults", "grace_ms", self.grace_ms, 0, MAX_CLOCK_MS, _DAY)
        if not isinstance(self.strict, bool):
            raise ConfigError(f"faults.strict must be true or false, got {self.strict!r}")

    @property
    def faults_allowed(self) -> int:
        """Faults tolerated before the seat is forfeited (0 in strict mode)."""
        return 0 if self.strict else self.max_faults

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {"max_faults": self.max_faults, "strict": self.strict, "grace_ms": self.grace_ms}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FaultPolicy:
        """The policy from :meth:`to_dict` output."""
        _known("faults", data, ("max_faults", "strict", "grace_ms"))
        return cls(**dict(data))


@dataclass(frozen=True)
class TableSpec:
    """Everything a referee needs to play one table; the same spec always deals the same cards."""

    table_id: str
    """Unique name of this table (within a run or a server)."""
    rules: Rules
    """The rules in force."""
    seed: int
    """Seed of the deal (of every deal, in a game of several hands)."""
    seats: tuple[str, ...]
    """Bot name per seat, seat 0 first; a name is one bot (its sessions are interchangeable)."""
    board: str
    """Cluster key for ratings: tables dealt the same cards share it (e.g. ``f"{seed}"``)."""
    hands: int | None = 1
    """Hands to play; None plays a full game until someone reaches ``rules.target``."""
    clocks: Clocks = field(default_factory=Clocks)
    """The clocks."""
    faults: FaultPolicy = field(default_factory=FaultPolicy)
    """The failure policy."""
    watchable: bool = True
    """Whether the referee's spectator service lists this table and lets anyone watch it. False
    for a table whose deal is also played at other tables (a duplicate board's rotations):
    spectators need no login, so a bot could watch one rotation and learn from its card play, and
    from each hand's HandRevealed, the cards it holds or will hold at another. Such a table's
    games are seen in its record instead (``arena replay``; the competition server's
    ``/api/games`` once the board is done)."""

    def __post_init__(self) -> None:
        if not isinstance(self.table_id, str) or not self.table_id:
            raise ConfigError(
                f"a table needs a table_id (a non-empty string), got {self.table_id!r}"
            )
        if not isinstance(self.rules, Rules):
            raise ConfigError(
                f"table {self.table_id!r}: rules must be a Rules, e.g. "
                f"{rules_example(self.rules)} from arena.rules, got {self.rules!r:.80}"
            )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ConfigError(
                f"table {self.table_id!r}: seed must be a whole number, got {self.seed!r}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            # -1 often asks for a random seed elsewhere; here it dealt fixed cards, and a seed
            # past 64 bits played, then failed where the record was stored.
            raise ConfigError(
                f"table {self.table_id!r}: seed {self.seed} is out of range: give a whole number "
                f"from 0 to {MAX_SEED} (2**63 - 1); the same seed always deals the same cards"
            )
        if not isinstance(self.board, str):
            raise ConfigError(
                f"table {self.table_id!r}: board must be a string, got {self.board!r}"
            )
        # A string is a sequence of names too, of one letter each: "alice" would seat a, l, i...
        if isinstance(self.seats, str):
            raise ConfigError(
                f"table {self.table_id!r}: seats must be a list of bot names, one per seat, "
                f"got the string {self.seats!r}"
            )
        try:
            object.__setattr__(self, "seats", tuple(self.seats))
        except TypeError:
            raise ConfigError(
                f"table {self.table_id!r}: seats must be a list of bot names, one per seat, "
                f"got {self.seats!r}"
            ) from None
        if len(self.seats) != self.rules.players:
            raise ConfigError(
                f"table {self.table_id!r}: {len(self.seats)} seats {list(self.seats)} "
                f"for a {self.rules.players}-player game"
            )
        if any(not isinstance(s, str) or not s for s in self.seats):
            raise ConfigError(f"table {self.table_id!r}: every seat needs a bot name: {self.seats}")
        if self.hands is not None and (
            not isinstance(self.hands, int) or isinstance(self.hands, bool) or self.hands < 1
        ):
            raise ConfigError(
                f"table {self.table_id!r}: hands must be a whole number >= 1 or None "
                f"(a full game), got {self.hands!r}"
            )
        # Checked here, not where the referee first reads them (an AttributeError in its thread).
        if not isinstance(self.clocks, Clocks):
            raise ConfigError(
                f"table {self.table_id!r}: clocks must be a Clocks, e.g. Clocks(move_ms=1000) "
                f"from arena.table, got {self.clocks!r}"
            )
        if not isinstance(self.faults, FaultPolicy):
            raise ConfigError(
                f"table {self.table_id!r}: faults must be a FaultPolicy, e.g. "
                f"FaultPolicy(max_faults=3) from arena.table, got {self.faults!r}"
            )
        if not isinstance(self.watchable, bool):
            raise ConfigError(
                f"table {self.table_id!r}: watchable must be true or false, got {self.watchable!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "table_id": self.table_id,
            "rules": self.rules.to_dict(),
            "seed": self.seed,
            "seats": list(self.seats),
            "board": self.board,
            "hands": self.hands,
            "clocks": self.clocks.to_dict(),
            "faults": self.faults.to_dict(),
            "watchable": self.watchable,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableSpec:
        """The spec from :meth:`to_dict` output (a record written before ``watchable`` existed
        reads as watchable, as its table was)."""
        return _whole("table spec (TableSpec.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> TableSpec:
        names = (
            "table_id",
            "rules",
            "seed",
            "seats",
            "board",
            "hands",
            "clocks",
            "faults",
            "watchable",
        )
        _known("table", data, names)
        # Passed on as they are, for the constructor's checks: int() made a seed of 7.9, True
        # or " 7" a valid one (another deal than asked for), str() a table id of 5 one.
        return cls(
            table_id=data["table_id"],
            rules=Rules.from_dict(data["rules"]),
            seed=data["seed"],
            seats=data["seats"],  # a string is refused, not split into one-letter names
            board=data["board"],
            hands=data.get("hands", 1),
            clocks=Clocks.from_dict(data.get("clocks", {})),
            faults=FaultPolicy.from_dict(data.get("faults", {})),
            watchable=data.get("watchable", True),
        )


class Termination(Enum):
    """How a game, or one seat's part in it, ended."""

    NORMAL = "normal"
    """Played to the end as asked."""
    TIMEOUT = "timeout"
    """The seat ran out of time too often."""
    ILLEGAL = "illegal"
    """The seat sent illegal or unreadable moves too often."""
    DISCONNECT = "disconnect"
    """The seat's bot went away (or never came to the table) and was not back within the grace
    period."""
    FORFEIT = "forfeit"
    """The seat was forfeited for faults of several kinds (or at the first, in strict mode)."""
    INTERRUPTED = "interrupted"
    """The referee stopped (a signal, a shutdown) before the game ended."""
    CRASH = "crash"
    """The referee itself failed; the record says what it knew."""

    @property
    def is_forfeit(self) -> bool:
        """Whether a seat that ended this way lost the game by forfeit."""
        return self in _FORFEITS


_FORFEITS = frozenset(
    {Termination.TIMEOUT, Termination.ILLEGAL, Termination.DISCONNECT, Termination.FORFEIT}
)


class FaultKind(Enum):
    """What a bot did wrong at one decision."""

    TIMEOUT = "timeout"
    """No answer before the move deadline and the bank ran out."""
    ILLEGAL_CARD = "illegal-card"
    """A card the seat holds but the rules forbid now (and which rule)."""
    CARD_NOT_HELD = "card-not-held"
    """A card the seat does not hold."""
    MALFORMED = "malformed"
    """Not a card, or a message that does not parse."""
    WRONG_REQUEST_ID = "wrong-request-id"
    """An answer echoing a request id other than the one pending."""
    DISCONNECT = "disconnect"
    """The bot was not connected when the seat had to decide."""
    WRONG_PASS = "wrong-pass"
    """A pass of the wrong number of cards, or the same card twice."""
    PROTOCOL = "protocol"
    """A message out of order: a pass answering a play request, an unrequested message, a flood."""

    @property
    def termination(self) -> Termination:
        """The seat termination when too many faults of only this kind forfeit it."""
        if self is FaultKind.TIMEOUT:
            return Termination.TIMEOUT
        if self is FaultKind.DISCONNECT:
            return Termination.DISCONNECT
        return Termination.ILLEGAL


@dataclass(frozen=True)
class Fault:
    """One fault of one seat: what was wrong, and what the referee played instead."""

    hand: int
    """The hand number (from 0)."""
    trick: int
    """The trick number within the hand (from 0); -1 in the pass."""
    seat: int
    """The seat at fault."""
    bot: str
    """The bot playing that seat."""
    kind: FaultKind
    """What kind of fault."""
    detail: str
    """One human sentence: exactly what was wrong."""
    sent: str
    """What the bot sent, as text ("" when nothing arrived)."""
    substitute: tuple[str, ...]
    """The card(s) played instead (empty when the fault changed nothing, e.g. a late reply)."""
    at_ms: float
    """When, in milliseconds since the table started, on the referee's monotonic clock."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "hand": self.hand,
            "trick": self.trick,
            "seat": self.seat,
            "bot": self.bot,
            "kind": self.kind.value,
            "detail": self.detail,
            "sent": self.sent,
            "substitute": list(self.substitute),
            "at_ms": self.at_ms,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fault:
        """The fault from :meth:`to_dict` output."""
        return _whole("fault (Fault.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> Fault:
        return cls(
            hand=_int(data, "hand"),
            trick=_int(data, "trick"),
            seat=_int(data, "seat"),
            bot=_text(data, "bot"),
            kind=FaultKind(data["kind"]),
            detail=_text(data, "detail"),
            sent=_text(data, "sent"),
            substitute=_codes(data, "substitute"),
            at_ms=_real(data, "at_ms"),
        )


@dataclass(frozen=True)
class Decision:
    """One decision of one seat, as it was taken and timed."""

    hand: int
    """The hand number (from 0)."""
    seat: int
    """The deciding seat."""
    kind: str
    """"pass" or "play" (room for the variants' other decision kinds)."""
    request_id: int
    """The id of the request the bot had to echo (0 for a forced move never sent)."""
    cards: tuple[str, ...]
    """The card(s) that went on the table (the substitute, after a fault)."""
    elapsed_ms: float
    """From sending the request to reading the answer (or to giving up), referee's clock."""
    forced: bool
    """A single legal card played without asking the bot."""
    fault: FaultKind | None = None
    """The fault committed at this decision, if any."""
    fallback: bool = False
    """The cards came from the referee's fallback player (a substitute or a forfeited seat)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "hand": self.hand,
            "seat": self.seat,
            "kind": self.kind,
            "request_id": self.request_id,
            "cards": list(self.cards),
            "elapsed_ms": self.elapsed_ms,
            "forced": self.forced,
            "fault": None if self.fault is None else self.fault.value,
            "fallback": self.fallback,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """The decision from :meth:`to_dict` output."""
        return _whole("decision (Decision.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> Decision:
        fault = data.get("fault")
        return cls(
            hand=_int(data, "hand"),
            seat=_int(data, "seat"),
            kind=_text(data, "kind"),
            request_id=_int(data, "request_id"),
            cards=_codes(data, "cards"),
            elapsed_ms=_real(data, "elapsed_ms"),
            forced=_flag(data, "forced"),
            fault=None if fault is None else FaultKind(fault),
            fallback=_flag(data, "fallback", False),
        )


@dataclass(frozen=True)
class LateReply:
    """An answer that arrived after its request had timed out: dropped, and noted here."""

    hand: int
    """The hand number (from 0)."""
    seat: int
    """The seat whose bot sent it."""
    bot: str
    """That bot."""
    request_id: int
    """The request it answered."""
    sent: str
    """What it said."""
    late_ms: float
    """How long after the request's deadline it arrived (referee's clock)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "hand": self.hand,
            "seat": self.seat,
            "bot": self.bot,
            "request_id": self.request_id,
            "sent": self.sent,
            "late_ms": self.late_ms,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LateReply:
        """The late reply from :meth:`to_dict` output."""
        return _whole("late reply (LateReply.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> LateReply:
        return cls(
            hand=_int(data, "hand"),
            seat=_int(data, "seat"),
            bot=_text(data, "bot"),
            request_id=_int(data, "request_id"),
            sent=_text(data, "sent"),
            late_ms=_real(data, "late_ms"),
        )


@dataclass(frozen=True)
class TrickRecord:
    """One finished trick."""

    leader: int
    """The seat that led."""
    cards: tuple[str, ...]
    """The cards in the order played, the leader's first."""
    winner: int
    """The seat that took it."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {"leader": self.leader, "cards": list(self.cards), "winner": self.winner}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrickRecord:
        """The trick from :meth:`to_dict` output."""
        return _whole("trick record (TrickRecord.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> TrickRecord:
        return cls(_int(data, "leader"), _codes(data, "cards"), _int(data, "winner"))


@dataclass(frozen=True)
class HandRecord:
    """One finished (or interrupted) hand: its deal, passes and finished tricks (an interrupted
    hand's unfinished trick is in the record's decisions only)."""

    number: int
    """The hand number (from 0)."""
    dealer: int
    """The dealer's seat."""
    pass_direction: str
    """The pass direction's value ("left", "right", "across", "hold", ...)."""
    dealt: tuple[tuple[str, ...], ...]
    """The cards dealt, per seat."""
    passes: tuple[tuple[str, ...], ...]
    """The cards each seat passed (empty tuples on a hold hand)."""
    tricks: tuple[TrickRecord, ...]
    """The finished tricks, in order."""
    points: tuple[int, ...]
    """Points scored per seat, after the moon (zeros if the hand was interrupted)."""
    moon: int | None
    """The seat that shot the moon, if any."""
    sun: bool
    """Whether the moon was also the sun (every trick)."""
    complete: bool = True
    """False when the referee stopped before the hand's last trick."""
    kitty: tuple[str, ...] = ()
    """The cards left undealt (the kitty), which go to the first trick's winner; empty unless
    the rules deal one."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "number": self.number,
            "dealer": self.dealer,
            "pass_direction": self.pass_direction,
            "dealt": [list(h) for h in self.dealt],
            "passes": [list(p) for p in self.passes],
            "tricks": [t.to_dict() for t in self.tricks],
            "points": list(self.points),
            "moon": self.moon,
            "sun": self.sun,
            "complete": self.complete,
            "kitty": list(self.kitty),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HandRecord:
        """The hand from :meth:`to_dict` output."""
        return _whole("hand record (HandRecord.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> HandRecord:
        return cls(
            number=_int(data, "number"),
            dealer=_int(data, "dealer"),
            pass_direction=_text(data, "pass_direction"),
            dealt=_card_lists(data, "dealt"),
            passes=_card_lists(data, "passes"),
            tricks=tuple(TrickRecord.from_dict(t) for t in data["tricks"]),
            points=_ints(data, "points"),
            moon=None if data.get("moon") is None else _int(data, "moon"),
            sun=_flag(data, "sun", False),
            complete=_flag(data, "complete", True),
            kitty=_codes(data, "kitty", ()),
        )


@dataclass(frozen=True)
class GameRecord:
    """The full record of one table: the spec, every hand, decision and fault, and the result."""

    spec: TableSpec
    """What was asked."""
    hands: tuple[HandRecord, ...]
    """The hands played, in order."""
    decisions: tuple[Decision, ...]
    """Every decision, in the order taken (pass decisions in the order they arrived)."""
    faults: tuple[Fault, ...]
    """Every fault, in order."""
    totals: tuple[int, ...]
    """Points per seat over the hands played."""
    placings: tuple[int, ...]
    """Place per seat, 1 = best (equal results share the better place); a forfeited seat is placed
    below every seat that was not forfeited, whatever its points."""
    termination: Termination
    """How the game ended: NORMAL, or INTERRUPTED, or CRASH."""
    seat_status: tuple[Termination, ...]
    """How each seat ended: NORMAL, or a forfeit (TIMEOUT, ILLEGAL, DISCONNECT, FORFEIT)."""
    reason: str
    """One human-readable line saying how the game ended."""
    started_at: float
    """Wall-clock start (seconds since the epoch; for display only)."""
    finished_at: float
    """Wall-clock end (seconds since the epoch; for display only)."""
    late: tuple[LateReply, ...] = ()
    """Answers that arrived after their deadline and were dropped."""

    @property
    def forfeits(self) -> tuple[int, ...]:
        """The seats that lost by forfeit."""
        return tuple(s for s, t in enumerate(self.seat_status) if t.is_forfeit)

    def faults_of(self, seat: int) -> tuple[Fault, ...]:
        """The faults of one seat."""
        return tuple(f for f in self.faults if f.seat == seat)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "spec": self.spec.to_dict(),
            "hands": [h.to_dict() for h in self.hands],
            "decisions": [d.to_dict() for d in self.decisions],
            "faults": [f.to_dict() for f in self.faults],
            "totals": list(self.totals),
            "placings": list(self.placings),
            "termination": self.termination.value,
            "seat_status": [t.value for t in self.seat_status],
            "reason": self.reason,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "late": [x.to_dict() for x in self.late],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameRecord:
        """The record from :meth:`to_dict` output."""
        return _whole("game record (GameRecord.to_dict() output)", cls._from_dict, data)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> GameRecord:
        record = cls._read(data)
        seats = len(record.spec.seats)
        for name in ("totals", "placings", "seat_status"):
            # A record whose per-seat lists do not fit its table was read as it was.
            given = len(getattr(record, name))
            if given != seats:
                raise ConfigError(
                    f"not a valid game record: {given} {name} for a table of {seats} seats"
                )
        return record

    @classmethod
    def _read(cls, data: Mapping[str, Any]) -> GameRecord:
        return cls(
            # The spec's missing field is this record's: GameRecord.from_dict says so.
            spec=TableSpec._from_dict(data["spec"]),
            hands=tuple(HandRecord.from_dict(h) for h in data["hands"]),
            decisions=tuple(Decision.from_dict(d) for d in data["decisions"]),
            faults=tuple(Fault.from_dict(f) for f in data["faults"]),
            totals=_ints(data, "totals"),
            placings=_ints(data, "placings"),
            termination=Termination(data["termination"]),
            seat_status=tuple(Termination(t) for t in data["seat_status"]),
            reason=_text(data, "reason"),
            started_at=_real(data, "started_at"),
            finished_at=_real(data, "finished_at"),
            late=tuple(LateReply.from_dict(x) for x in data.get("late", ())),
        )
