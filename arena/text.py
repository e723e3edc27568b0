"""Text from others (a bot's output, a referee's or an organiser's words) made safe to print on a
terminal: a light module, so that the client SDK can use it without arena's runner."""

from __future__ import annotations

__all__ = ["terminal_line", "terminal_safe"]


def terminal_safe(text: str) -> str:
    """``text`` as arena may quote it on a terminal: each control character (an escape
    sequence's ESC, BEL, NUL) written as its escape, ``\\x1b``, so that it can neither clear the
    screen nor retitle the window in an arena line; line breaks are kept."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c == "\n" else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


def terminal_line(text: str) -> str:
    """``text`` as one line on a terminal: :func:`terminal_safe`, with its line breaks written
    as ``\\n`` too (a reason that broke the line read as a second line of the output)."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )
