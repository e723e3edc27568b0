"""The leaderboard's routes: the static page, the JSON API behind it, and the admin API.

Public, read-only (GET)::

    /                       the page (web/index.html; it fetches the rest)
    /static/NAME            web/NAME (app.js, style.css)
    /healthz                200 "ok" while serving, 503 "draining" during a drain
    /api/health             {"status", "ladder", "sessions", "tables", "games", "uptime_s", ...}
    /api/standings          the published fit with intervals, and per bot: games, faults, ...
    /api/lobby              sessions waiting or playing, tables running
    /api/games?limit=&before=&bot=   recent games, newest first
    /api/games/N            one game's whole record (the replay), with each hand's pass targets

While another seat rotation of a game's board is running or still owed, both withhold the game's
seed and cards (a finished rotation would give away the deal of the rotations still to play):
``seed`` (``spec.seed`` in the record), each hand's ``dealt``, ``passes``, ``tricks`` and
``kitty``, the ``decisions``, and the cards in ``faults`` (``detail``, ``sent``, ``substitute``)
and ``late`` (``sent``) are null, and ``withheld`` says why; once the board is done ``withheld`` is
null and everything is shown (the competition decides: see ``Competition.recent`` and ``game``).

Admin (POST, ``Authorization: Bearer ADMIN_TOKEN``; the token comes from ``arena admin token``)::

    /api/admin/pause        stop forming new tables (running ones finish)
    /api/admin/resume
    /api/admin/kick         {"session": ID, "reason": TEXT}   end one session (a reason, as a
                            ban's, is at most 500 characters: MAX_NOTE_LENGTH)
    /api/admin/ban          {"bot": NAME, "reason": TEXT}   refuse its token, end its sessions
    /api/admin/unban        {"bot": NAME}
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from http import HTTPStatus
from importlib import resources
from typing import Any, Final, Protocol

from arena.errors import ArenaError
from arena.rules import PassDirection
from arena.server.http import Handler, Request, Response, json_response

__all__ = ["ADMIN_ACTIONS", "AdminError", "Site", "load_static", "make_handler"]

log = logging.getLogger("arena.server")

ADMIN_ACTIONS = ("pause", "resume", "kick", "ban", "unban")
"""The admin API's actions."""
_ADMIN_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "pause": (),
    "resume": (),
    "kick": ("session", "reason"),
    "ban": ("bot", "reason"),
    "unban": ("bot",),
}
"""The body keys each admin action reads: another is refused, not ignored (a misspelt "reason"
would ban with the earlier reason, without a word)."""
DEFAULT_GAMES = 30
MAX_GAMES = 500
MAX_GAME_NUMBER = 2**63 - 1
"""The largest game number SQLite can hold."""
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
# The page loads nothing from elsewhere; say so to the browser, so that an injected script could
# not either.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


class AdminError(ArenaError, ValueError):
    """An admin action that cannot be done (unknown session or bot, bad arguments); ``status``:
    the answer's (503 for a database another program keeps locked: the action may be retried)."""

    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> None:
        super().__init__(message)
        self.status = status


class NotFoundError(ArenaError, LookupError):
    """What a query names does not exist (a bot no account has)."""


class Site(Protocol):
    """What the routes need from the competition."""

    def health(self) -> dict[str, Any]:
        """Liveness and load."""
        ...

    def standings(self) -> dict[str, Any]:
        """The leaderboard."""
        ...

    def lobby(self) -> dict[str, Any]:
        """Sessions and running tables."""
        ...

    async def recent(self, limit: int, before: int | None, bot: str | None) -> list[dict[str, Any]]:
        """Recent games; raises :class:`NotFoundError` for a bot that has no account."""
        ...

    async def game(self, number: int) -> str | None:
        """One stored record as JSON text."""
        ...

    async def check_admin(self, token: str) -> bool:
        """Whether the token is the admin's."""
        ...

    async def admin(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Do an admin action; raises :class:`AdminError`."""
        ...


def load_static() -> dict[str, bytes]:
    """The page's files, read once (name -> bytes)."""
    files: dict[str, bytes] = {}
    folder = resources.files("arena.server").joinpath("web")
    for entry in folder.iterdir():
        if entry.is_file() and not entry.name.startswith("."):
            files[entry.name] = entry.read_bytes()
    return files


def _static(name: str, files: Mapping[str, bytes]) -> Response:
    body = files.get(name)
    if body is None:
        return json_response({"error": f"no file {name!r}"}, HTTPStatus.NOT_FOUND)
    suffix = name[name.rfind(".") :] if "." in name else ""
    return Response(
        HTTPStatus.OK,
        body,
        _TYPES.get(suffix, "application/octet-stream"),
        (("Content-Security-Policy", _CSP), ("Cache-Control", "no-cache")),
    )


def with_pass_targets(record_text: str, number: int) -> dict[str, Any]:
    """A stored record made ready for the page: the game number and each hand's pass targets."""
    record: dict[str, Any] = json.loads(record_text)
    players = len(record["spec"]["seats"])
    for hand in record["hands"]:
        try:
            offset = PassDirection(hand["pass_direction"]).offset(players)
        except ValueError:
            offset = 0
        hand["pass_to"] = [(seat + offset) % players for seat in range(players)]
    record["game"] = number
    return record


def _not_allowed(method: str, path: str, allow: str) -> Response:
    """405, with the methods the path takes (the Allow header HTTP asks for)."""
    refused = json_response(
        {"error": f"{method} {path} is not served: use {allow}"}, HTTPStatus.METHOD_NOT_ALLOWED
    )
    return Response(
        refused.status, refused.body, refused.content_type, (*refused.headers, ("Allow", allow))
    )


_PARAMETERS: dict[str, tuple[str, ...]] = {"/api/games": ("limit", "before", "bot")}
"""The query parameters an /api/ path takes; every other one takes none (a misspelt or misplaced
parameter is refused, not ignored: `/api/standings?bot=x` would look like a filter that works)."""


class _GivenTwice(ValueError):
    """A key given twice in one JSON object of an admin body."""


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's keys and values; :class:`_GivenTwice` for a key given twice (the last
    one won: ``{"bot": "alice", "bot": "bob"}`` banned bob, without a word)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _GivenTwice(f"{key!r} given twice in the JSON body: give it once")
        out[key] = value
    return out


def _unknown_parameter(path: str, query: Mapping[str, str], hint: str = "") -> Response | None:
    """A 400 naming the first query parameter ``path`` does not take (None if there is none)."""
    takes = _PARAMETERS.get(path, ())
    unknown = sorted(set(query) - set(takes))
    if not unknown:
        return None
    if takes:
        fix = "give " + " or ".join(filter(None, (", ".join(takes[:-1]), takes[-1])))
    else:
        fix = f"{path} takes no parameters{hint}"
    return json_response(
        {"error": f"unknown parameter {unknown[0]!r}: {fix}"}, HTTPStatus.BAD_REQUEST
    )


_NUMBER = re.compile(r"[0-9]+")
"""A game number as the API takes it: ASCII digits only."""
_INTEGER = re.compile(r"-?[0-9]+")
"""A query's whole number (a negative one is then refused as out of range, saying the range)."""


def _value(digits: str) -> int:
    """The value of a :data:`_INTEGER` match of any length, as far as a range check needs it."""
    magnitude = digits.lstrip("-").lstrip("0") or "0"
    # int() refuses more than 4,300 digits (a ValueError: a 500); past 20 the value is out of
    # every range the API takes.
    value = int(magnitude) if len(magnitude) <= 20 else 10**20
    return -value if digits.startswith("-") else value


def _int_arg(
    query: Mapping[str, str], name: str, default: int | None, low: int, high: int
) -> int | None:
    text = query.get(name)
    if text is None:
        return default
    if text == "":
        # As an empty bot= is: read as the default, `limit=` hid a query built with a value
        # left out.
        unset = f"{default}" if default is not None else "the newest games"
        raise AdminError(f"{name} is empty: give {low} to {high}, or leave {name} out for {unset}")
    if not _INTEGER.fullmatch(text):  # int() would take "+5", "1_0" and other scripts' digits
        raise AdminError(f"{name}={text!r} is not a whole number")
    value = _value(text)
    if not low <= value <= high:
        raise AdminError(f"{name}={text}: give {low} to {high}")
    return value


_API_PATHS: Final = ("/api/health", "/api/standings", "/api/lobby", "/api/games")
"""The JSON API's paths (with /api/games/ followed by a number)."""


def _admin_elsewise(method: str, path: str) -> Response:
    """Another method than POST at ``/api/admin/ACTION``: a 405 for an action, else a 404 (a 405
    saying "use POST" sent a client to a path that is not served)."""
    action = path.removeprefix("/api/admin/")
    if action in ADMIN_ACTIONS:
        return _not_allowed(method, path, "POST")
    return _no_such_action(action)


def _no_such_action(action: str) -> Response:
    """The 404 of an admin action that does not exist, naming those that do."""
    return json_response(
        {"error": f"no admin action {action!r}; known: {', '.join(ADMIN_ACTIONS)}"},
        HTTPStatus.NOT_FOUND,
    )


def _served(path: str) -> bool:
    """Whether GET serves ``path`` (another method there is a 405, not a 404)."""
    return path in ("/", "/healthz", *_API_PATHS) or path.startswith(("/static/", "/api/games/"))


def make_handler(site: Site, files: Mapping[str, bytes] | None = None) -> Handler:
    """The request handler for the leaderboard and its APIs."""
    static = dict(load_static() if files is None else files)

    async def handle(request: Request) -> Response:
        path = request.path.rstrip("/") or "/"
        if request.method in ("GET", "HEAD"):
            return await _get(path, request)
        admin = path.startswith("/api/admin/")
        if request.method == "POST" and admin:
            return await _admin(path.removeprefix("/api/admin/"), request)
        if admin:
            return _admin_elsewise(request.method, path)
        if path == "/api/admin":  # "use GET, HEAD", where GET is a 404 too
            return json_response(
                {
                    "error": f"no admin action given: POST /api/admin/ACTION, one of "
                    f"{', '.join(ADMIN_ACTIONS)}"
                },
                HTTPStatus.NOT_FOUND,
            )
        if not _served(path):  # a typo: "use GET, HEAD" sent a script to a 404
            return json_response({"error": f"nothing at {path}"}, HTTPStatus.NOT_FOUND)
        return _not_allowed(request.method, path, "GET, HEAD")

    async def _get(path: str, request: Request) -> Response:
        if path.startswith("/api/admin/"):
            return _admin_elsewise(request.method, path)
        if path == "/":
            return _static("index.html", static)
        if path.startswith("/static/"):
            return _static(path.removeprefix("/static/"), static)
        if path == "/healthz":
            health = site.health()
            ok = health.get("status") == "ok"
            return Response(
                HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE,
                str(health["status"]).encode(),
            )
        if path in _API_PATHS or path.startswith("/api/games/"):
            refused = _unknown_parameter(path, request.query)
            if refused is not None:
                return refused
        if path == "/api/health":
            return json_response(site.health())
        if path == "/api/standings":
            return json_response(site.standings())
        if path == "/api/lobby":
            return json_response(site.lobby())
        if path == "/api/games":
            try:
                limit = _int_arg(request.query, "limit", DEFAULT_GAMES, 1, MAX_GAMES)
                before = _int_arg(request.query, "before", None, 0, MAX_GAME_NUMBER)
            except AdminError as e:
                return json_response({"error": str(e)}, HTTPStatus.BAD_REQUEST)
            bot = request.query.get("bot")
            if bot == "":
                return json_response(
                    {"error": "bot is empty: give a bot's name, or leave bot out for every game"},
                    HTTPStatus.BAD_REQUEST,
                )
            try:
                games = await site.recent(limit or DEFAULT_GAMES, before, bot)
            except NotFoundError as e:
                return json_response({"error": str(e)}, HTTPStatus.NOT_FOUND)
            return json_response({"games": games})
        if path.startswith("/api/games/"):
            key = path.removeprefix("/api/games/")
            if not _NUMBER.fullmatch(key):
                return json_response(
                    {"error": f"game {key!r}: give a game number"}, HTTPStatus.BAD_REQUEST
                )
            number = _value(key)
            text = await site.game(number) if number <= MAX_GAME_NUMBER else None
            if text is None:
                playing = any(t.get("game") == number for t in site.lobby().get("tables", ()))
                said = (
                    f"game {key} is being played: its record is here once it ends"
                    if playing
                    else f"no game {key}"
                )
                return json_response({"error": said}, HTTPStatus.NOT_FOUND)
            return json_response(with_pass_targets(text, number))
        return json_response({"error": f"nothing at {path}"}, HTTPStatus.NOT_FOUND)

    async def _admin(action: str, request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        # The scheme's name is case-insensitive (RFC 9110 11.1): "bearer TOKEN" is as good.
        scheme, _, given = auth.strip().partition(" ")
        token = given.strip() if scheme.lower() == "bearer" else ""
        if not await site.check_admin(token):
            why = (
                "that is not the admin token (make one with `arena admin token --db DB`; a new "
                "one replaces the old)"
                if token
                else "admin actions need 'Authorization: Bearer TOKEN' with the admin token"
            )
            # Where an organiser sees someone trying tokens (never the token given).
            log.warning(
                "admin action refused",
                extra={
                    "action": action,
                    "peer": request.peer,
                    "why": "wrong token" if token else "no token",
                },
            )
            return json_response({"error": why}, HTTPStatus.UNAUTHORIZED)
        if action not in ADMIN_ACTIONS:
            return _no_such_action(action)
        refused = _unknown_parameter(
            request.path.rstrip("/"), request.query, "; send its arguments as a JSON body"
        )
        if refused is not None:
            return refused
        try:
            args = json.loads(request.body, object_pairs_hook=_once_each) if request.body else {}
        except _GivenTwice as e:
            return json_response({"error": str(e)}, HTTPStatus.BAD_REQUEST)
        except RecursionError:
            # Nested deeper than the parser goes (a body of "[[[[..."): it was a 500 with a
            # traceback in the log, where the API promises a 4xx saying why.
            return json_response(
                {"error": "the body must be a JSON object, not nested this deep"},
                HTTPStatus.BAD_REQUEST,
            )
        except ValueError:
            return json_response({"error": "the body must be JSON"}, HTTPStatus.BAD_REQUEST)
        if not isinstance(args, dict):
            return json_response(
                {"error": "the body must be a JSON object"}, HTTPStatus.BAD_REQUEST
            )
        takes = _ADMIN_ARGUMENTS[action]
        unknown = sorted(set(args) - set(takes))
        if unknown:
            fix = f"give {' or '.join(takes)}" if takes else f"{action} takes none"
            return json_response(
                {"error": f"unknown argument {unknown[0]!r}: {fix}"}, HTTPStatus.BAD_REQUEST
            )
        # Each argument is text: str() of another type would ban "None" for a null reason (over
        # the reason the earlier ban gave) or look for a bot named "['x']".
        for key in takes:
            if key in args and not isinstance(args[key], str):
                given = json.dumps(args[key])
                return json_response(
                    {"error": f"{key} must be a string, not {given[:40]}: give {key} as text"},
                    HTTPStatus.BAD_REQUEST,
                )
            if key in args and not _encodable(args[key]):
                # JSON lets "\ud800" through; SQLite and gRPC take UTF-8 only, and a ban with it
                # was a 500 "internal error" (a traceback in the log) that banned nobody.
                return json_response(
                    {
                        "error": f"{key} is not valid Unicode text (a lone surrogate such as "
                        f"\\ud800): send {key} as UTF-8 text"
                    },
                    HTTPStatus.BAD_REQUEST,
                )
        needed = takes[:1]
        if needed and needed[0] not in args:
            return json_response(
                {"error": f"{action} needs {needed[0]!r} in the JSON body"},
                HTTPStatus.BAD_REQUEST,
            )
        try:
            return json_response(await site.admin(action, args))
        except AdminError as e:
            # Else the log showed only the "admin action" asked, as for one done: an organiser
            # could not tell a ban that happened from one refused (no such bot, say).
            log.warning(
                "admin action refused",
                extra={"action": action, "peer": request.peer, "why": str(e)},
            )
            return json_response({"error": str(e)}, e.status)

    return handle


def _encodable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (JSON's escapes can name lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
