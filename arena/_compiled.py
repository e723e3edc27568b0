"""The stale-build guard of the modules setup.py compiles with mypyc.

setup.py compiles the engine's kernel (``arena._kernel``) and the referee's per-decision code
(:data:`REFEREE_MODULES`: a bot's stream, the table's game loop, its hand-encoded messages and
the spectators' feed) when it can, each from a copy of the sources whose ``_BUILT_FROM = ""``
line carries the SHA-256 of the originals. The compiled modules sit beside their sources and
Python imports them first; each ends by calling :func:`guard`, which keeps the compiled
definitions only while the sources beside them are the ones they were built from. Otherwise (an
edit since the install, or ``HEARTS_ARENA_PURE_ENGINE=1``) it runs the module's Python source in
their place, so a stale build never stands in for edited code. Each such module ends with::

    _BUILT_FROM = ""  # setup.py writes the digest here in the copy it compiles
    COMPILED, BUILD = _compiled.guard(globals(), _BUILT_FROM)

``COMPILED`` says whether the compiled definitions run and ``BUILD`` says which runs, in words.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["NOT_BUILT", "PURE_VARIABLE", "REFEREE_MODULES", "guard", "sources_digest"]

REFEREE_MODULES = (
    "referee/session.py",
    "referee/wire.py",
    "referee/game.py",
    "referee/spectators.py",
)
"""The compiled modules, relative to the package (setup.py holds the same list)."""
PURE_VARIABLE = "HEARTS_ARENA_PURE_ENGINE"
"""Set to 1: the Python sources run (and an install compiles nothing), as for the kernel."""
NOT_BUILT = "Python source (no compiled build installed)"
"""The ``BUILD`` of a module run from its source file."""
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_warned = False
"""Whether this process was told that the variable's value is not one it reads."""


def _is_arena_command() -> bool:
    """Whether this process is the ``arena`` command, which refuses a value of the variable
    other than 1 or 0 in one line of its own: the warning's two lines came before it."""
    argv = getattr(sys, "argv", None) or [""]
    return os.path.splitext(os.path.basename(str(argv[0])))[0] == "arena"


def _importer() -> tuple[str, int]:
    """The file and line of the first frame outside this package and the import machinery."""
    frame = sys._getframe(0)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_PACKAGE) or name.startswith("<frozen") or "importlib" in name):
            return name, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>", 0


def sources_digest(folder: str, names: Sequence[str] = REFEREE_MODULES) -> str:
    """The SHA-256 of the sources ``names`` (paths in the package; the referee's by default)
    under ``folder``: setup.py computes the same into a build."""
    digest = hashlib.sha256()
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def guard(
    namespace: dict[str, Any],
    built_from: str,
    names: Sequence[str] = REFEREE_MODULES,
    folder: str = _PACKAGE,
) -> tuple[bool, str]:
    """At the end of a module (``namespace``: its globals; ``built_from``: the digest a compiled
    copy carries, empty in the source): keep a compiled module if the sources ``names`` in
    ``folder`` are those of its build, else run the module's source in its place. Whether the
    compiled definitions stand, and which build runs in words."""
    if not built_from:
        return False, NOT_BUILT
    global _warned
    pure = os.environ.get(PURE_VARIABLE)
    if pure not in (None, "", "0", "1") and not _warned and not _is_arena_command():
        _warned = True
        # Only "1" switches: say so rather than run the compiled build without a word (the arena
        # command refuses such a value; a program importing the package is warned, once).
        # Said at the importing program's line: a stack level pointed into importlib when the
        # package was imported through `from arena import Game`.
        filename, lineno = _importer()
        warnings.warn_explicit(
            f"{PURE_VARIABLE}={pure} is not 1 or 0: the compiled build runs; set it to 1 to run "
            "the Python source, or unset it",
            RuntimeWarning,
            filename,
            lineno,
        )
    if pure == "1":
        why = f"{PURE_VARIABLE}=1"
    else:
        try:
            current = sources_digest(folder, names) == built_from
        except OSError:  # no sources beside the build: nothing it could be stale against
            current = True
        why = "" if current else "the sources changed since the build; reinstall to rebuild"
    if not why:
        return True, "compiled with mypyc"
    name = str(namespace["__name__"]).removeprefix("arena.").replace(".", "/") + ".py"
    path = os.path.join(folder, name)
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    # The source's own _BUILT_FROM is empty, so its call returns at once.
    exec(code, namespace)
    return False, f"Python source ({why})"
