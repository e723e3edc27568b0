"""Argument types for the benchmark scripts: a bad number is argparse's one-line usage error.

Each script would otherwise take ``--rounds 0`` or ``--seconds nan`` and fail much later with a
traceback (an empty median, a division by zero, a loop that never ends).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["at_least", "positive_seconds"]


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value}: give {low} or more")
        return value

    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds above 0")
    return value
