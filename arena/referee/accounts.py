"""Who a token belongs to: the referee's view of bot accounts.

The referee needs one question answered at each handshake: whose is this token, and may that bot
play now? :class:`Accounts` is that question as a protocol, so that the competition server can
plug in its hashed-token store (``arena.server.accounts.AccountStore`` fits it as it stands) and
the arena director can use :class:`TokenAccounts`, an in-memory table it fills with a fresh token
per bot process.

Tokens are never kept in the clear here: :class:`TokenAccounts` stores their SHA-256 digests and
compares digests with :func:`hmac.compare_digest`, against every entry, so that neither the
comparison nor the number of comparisons depends on the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from arena.errors import ConfigError

__all__ = [
    "MAX_NOTE_LENGTH",
    "Accounts",
    "BotIdentity",
    "Identity",
    "Standing",
    "TokenAccounts",
    "token_key",
]

TOKEN_BYTES = 32
"""Random bytes in a token made by :meth:`TokenAccounts.issue` (256 bits)."""
MAY_PLAY = "active"
"""The ``status.value`` of an identity that may play; any other value is refused."""
MAX_NOTE_LENGTH = 500
"""Longest reason told to a bot: a ban's (the note of a refused identity) or a kick's. A ban's is
told in the refused bot's gRPC status, which travels in the call's metadata: past a few kilobytes
(8 KiB by default, non-ASCII taking up to 12 bytes a character there) the bot's gRPC dropped it as
RESOURCE_EXHAUSTED, and the banned bot, never told it was banned, retried for ever."""


class Identity(Protocol):
    """What a token says: whose it is and whether that bot may play now."""

    @property
    def name(self) -> str:
        """The bot's name, the key tables use for seats."""
        ...

    @property
    def status(self) -> Enum:
        """Whether it may play: a status whose value is ``"active"`` may; any other is refused."""
        ...

    @property
    def note(self) -> str:
        """Why it may not play ("" if it may), shown to the bot in the refusal."""
        ...


class Accounts(Protocol):
    """The referee's account lookup.

    The referee calls :meth:`lookup` in worker threads of its own (a few calls at once), never on
    its event loop: a lookup may block (on a database, say) and only handshakes wait for it.
    A lookup that takes longer than the handshake timeout refuses the bot with UNAVAILABLE.
    """

    def lookup(self, token: str) -> Identity | None:
        """Who owns ``token``, or None when nobody does (a missing or unknown token); called
        from a thread other than the one that made the object."""
        ...


class Standing(Enum):
    """Whether a bot of a :class:`TokenAccounts` table may play."""

    ACTIVE = MAY_PLAY
    """May connect and play."""
    BANNED = "banned"
    """Refused with PERMISSION_DENIED."""


@dataclass(frozen=True)
class BotIdentity:
    """The :class:`Identity` a :class:`TokenAccounts` table answers with."""

    name: str
    """The bot's name."""
    status: Standing = Standing.ACTIVE
    """Whether it may play."""
    note: str = ""
    """Why not, when it may not."""

    def __post_init__(self) -> None:
        # Checked where it is made: a status given as text ("active") passed here and had every
        # bot refused at its handshake, far from the mistake.
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"BotIdentity.name must be a non-empty string, got {self.name!r:.60}")
        if not isinstance(self.status, Standing):
            raise ConfigError(
                "BotIdentity.status must be a Standing (Standing.ACTIVE or Standing.BANNED from "
                f"arena.referee), got {self.status!r:.60}"
            )
        if not isinstance(self.note, str):
            raise ConfigError(f"BotIdentity.note must be a string, got {self.note!r:.60}")


def token_key(token: str) -> bytes:
    """The digest a token is stored and compared as (SHA-256 of its UTF-8 bytes)."""
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenAccounts:
    """An in-memory account table: token digests to bot names. Several tokens may share a name."""

    def __init__(self, tokens: Mapping[str, str] | None = None) -> None:
        """Start from a mapping of token to bot name."""
        self._entries: list[tuple[bytes, BotIdentity]] = []
        self._banned: dict[str, str] = {}
        """Banned bot names, with the note: a token added for one later is refused too."""
        if tokens is not None and not isinstance(tokens, Mapping):  # else no attribute 'items'
            raise ConfigError(
                f"tokens must be a mapping of token to bot name, got {type(tokens).__name__}"
            )
        for token, name in (tokens or {}).items():
            self.add(token, name)

    def add(self, token: str, name: str) -> None:
        """Let ``token`` identify bot ``name`` (replacing what it identified before)."""
        if not isinstance(token, str) or not token:
            raise ConfigError(f"a token is a non-empty string, got {token!r} for bot {name!r}")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a bot's name is a non-empty string, got {name!r}")
        key = token_key(token)
        self._entries = [e for e in self._entries if e[0] != key]
        note = self._banned.get(name)
        identity = BotIdentity(name) if note is None else BotIdentity(name, Standing.BANNED, note)
        self._entries.append((key, identity))

    def issue(self, name: str) -> str:
        """A fresh random token for bot ``name``, added to the table and returned (shown once)."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        self.add(token, name)
        return token

    def ban(self, name: str, note: str) -> None:
        """Refuse every token of bot ``name`` from now on (PERMISSION_DENIED, with ``note``)."""
        self._banned[name] = note
        self._entries = [
            (k, BotIdentity(i.name, Standing.BANNED, note) if i.name == name else i)
            for k, i in self._entries
        ]

    def lookup(self, token: str) -> BotIdentity | None:
        """Who owns ``token`` (every entry is compared, in constant time), or None."""
        if not isinstance(token, str):
            # Else an AttributeError from inside the digest ('int' object has no attribute
            # 'encode'); the value is never shown: it may be a token, and this may be logged.
            raise ConfigError(
                "lookup takes the token as text (a str, as Hello.token carries it), got a "
                f"{type(token).__name__}"
            )
        if not token:
            return None
        key = token_key(token)
        found: BotIdentity | None = None
        for stored, identity in self._entries:
            if hmac.compare_digest(stored, key):
                found = identity
        return found

    @property
    def names(self) -> frozenset[str]:
        """The bot names that have a token."""
        return frozenset(i.name for _, i in self._entries)

    @classmethod
    def issue_for(cls, names: Iterable[str]) -> tuple[TokenAccounts, dict[str, str]]:
        """A table with one fresh token per name, and the tokens by name (to hand to the bots)."""
        if isinstance(names, str):  # a sequence of one-letter names too: bots "a", "b", "c"
            raise ConfigError(f"names must be a list of bot names, got the string {names!r}")
        if not isinstance(names, Iterable):  # None: "'NoneType' object is not iterable"
            raise ConfigError(f"names must be a list of bot names, got {names!r}")
        listed = list(names)
        twice = sorted({n for n in listed if isinstance(n, str) and listed.count(n) > 1})
        if twice:
            # Else two tokens were issued for it and only the second handed back.
            raise ConfigError(
                f"names lists {', '.join(map(repr, twice))} more than once: give each bot once "
                "(its sessions share its token)"
            )
        accounts = cls()
        return accounts, {name: accounts.issue(name) for name in listed}
