"""Hearts Arena: a bot-versus-bot competition harness for the card game Hearts.

The rules engine is importable without any network code::

    from arena import Card, Rules, Hand, Game
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hearts-arena")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
