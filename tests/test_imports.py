"""What importing the SDK and the referee's package loads: a bot process starts with the SDK
only, and every public name of :mod:`arena.referee` is there when asked for."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from importlib.metadata import version


def test_a_bot_process_loads_neither_the_referee_server_nor_package_metadata() -> None:
    # Loading the referee's server (through the SDK's card spellings in arena.referee.wire) and
    # importlib.metadata (for arena.__version__) made each bot's start about 20 ms longer each.
    code = (
        "import json, sys, arena.client; "
        "print(json.dumps(sorted(m for m in sys.modules if m in ("
        "'arena.referee.server', 'arena.referee.thread', 'importlib.metadata'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
    said = subprocess.run(
        [sys.executable, "-c", "import arena; print(arena.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert said.stdout.strip() == version("hearts-arena")


def resolves_lazily(package: str, modules: tuple[str, ...]) -> None:
    """Each public name of ``package`` (but ``__version__``) is the object of the module among
    ``modules`` it comes from and shows in ``dir()``; an unknown name is an AttributeError
    naming the package."""
    lazy = importlib.import_module(package)
    for name in lazy.__all__:
        if name == "__version__":
            continue
        home = next(m for m in modules if name in vars(importlib.import_module(f"{package}.{m}")))
        assert getattr(lazy, name) is getattr(importlib.import_module(f"{package}.{home}"), name)
        assert name in dir(lazy)
    try:
        lazy.no_such_name  # noqa: B018
    except AttributeError as e:
        assert f"'{package}'" in str(e) and "no_such_name" in str(e)
    else:
        raise AssertionError("an unknown name resolved")


def test_every_public_name_of_the_referee_package_resolves_to_its_module() -> None:
    resolves_lazily("arena.referee", ("accounts", "config", "fallback", "server", "thread"))


def test_the_package_loads_nothing_until_a_name_is_asked_for() -> None:
    # `arena` (the command line) sets its Ctrl-C guard once arena.cli runs, after this package
    # has loaded: the engine it loaded first left a Ctrl-C at the start a traceback.
    code = (
        "import json, sys, arena; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('arena.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
    resolves_lazily("arena", ("cards", "engine", "errors", "rules"))
    # The modules resolve as attributes too, as when the package imported them.
    arena = importlib.import_module("arena")
    for module in ("cards", "engine", "errors", "rules"):
        assert getattr(arena, module) is importlib.import_module(f"arena.{module}")
