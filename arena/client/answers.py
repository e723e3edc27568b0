"""What a bot's ``choose_play``/``choose_pass`` returned, as card codes, and what is wrong with it.

Over the network the SDK sends whatever the bot returned, as text, and lets the referee judge it
(a fault names the rule broken); in local play a wrong answer raises. Either way the author is
told what the method *returned*, e.g. "choose_pass returned None, not a list of cards": the
method did not raise, and a traceback inside the SDK would point at the wrong code.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from arena.cards import Card
from arena.client.bot import ASYNC_FIX
from arena.errors import CardParseError

# The referee's own table of the spellings a bot may send, and its words for a refusal: local play
# judges an answer's text by exactly the rule a real game would, in the referee's words.
from arena.referee.wire import CARD_FORM, card_spelled

__all__ = [
    "card_answered",
    "describe",
    "fit_pass",
    "fit_play",
    "pass_codes",
    "pass_of_codes",
    "play_code",
]

SHOWN_CHARS = 40
"""How much of a wrong answer's text a message quotes (a bot may return something huge)."""


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def describe(value: object) -> str:
    """A wrong answer named for a message: "None", "a Card (2C)", "an int (0)", "a str ('2c')"."""
    if value is None:
        return "None"
    if isinstance(value, Card):
        return f"a Card ({value})"
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name} ({_short(repr(value))})"


def play_code(value: object) -> tuple[str, str | None]:
    """The card code to send for ``choose_play``'s answer, and what is wrong with its type.

    What is wrong is None when the answer is a Card or a card's text.
    """
    if isinstance(value, Card | str):
        return str(value), None
    if inspect.iscoroutine(value):
        return _short(str(value)), _coroutine("choose_play", value)
    fix = ""
    if isinstance(value, list | tuple) and len(value) == 1 and isinstance(value[0], Card):
        fix = f": return the card itself, {value[0]}, not a {type(value).__name__}"
    return _short(str(value)), f"choose_play returned {describe(value)}, not a Card{fix}"


def _coroutine(method: str, value: object) -> str:
    """What is wrong with a coroutine returned by ``method`` (an ``async def``), which is closed:
    it will never run, and Python would add a "never awaited" warning of its own."""
    close = getattr(value, "close", None)
    if callable(close):
        close()
    wanted = "a Card" if method == "choose_play" else "a list of cards"
    return f"{method} returned a coroutine, not {wanted}: {method} is async def; {ASYNC_FIX}"


def pass_codes(value: object) -> tuple[list[str], str | None]:
    """The card codes to send for ``choose_pass``'s answer, and what is wrong with its type.

    What is wrong is None when the answer is a sequence of Cards or cards' texts.
    """
    if inspect.iscoroutine(value):
        return [_short(str(value))], _coroutine("choose_pass", value)
    wrong = f"choose_pass returned {describe(value)}, not a list of cards"
    if value is None or isinstance(value, Card | str) or not isinstance(value, Iterable):
        # One entry, as choose_play's answer would be sent ("None", "2C", "2C 3C 4C"): the
        # referee then says what it is, not only that the count is wrong.
        return [_short(str(value))], wrong
    items = list(value)
    codes = [_short(str(item)) for item in items]
    for item in items:
        if not isinstance(item, Card | str):
            kind = type(value).__name__
            return codes, f"choose_pass returned a {kind} holding {describe(item)}, not cards"
    return codes, None


MAX_SENT_CHARS = 256
"""The longest answer text the SDK sends for a play: a card's text, however padded, is far
shorter. A longer one went out whole, over the referee's message limit (64 KiB by default): the
referee ended the stream unjudged, and the bot reconnected and sent it again, until the seat's
deadline passed (a DISCONNECT fault, not the MALFORMED one the answer deserved)."""
MAX_SENT_CARDS = 52
"""The most card texts the SDK sends for a pass (a deck's worth), for the same reason."""


def fit_play(code: str) -> tuple[str, str | None]:
    """``code`` cut to what may be sent, and what was wrong if it had to be cut."""
    if len(code) <= MAX_SENT_CHARS:
        return code, None
    return _short(code), f"choose_play returned a text of {len(code)} characters, not a card"


def fit_pass(codes: list[str]) -> tuple[list[str], str | None]:
    """``codes`` cut to what may be sent, and what was wrong if they had to be cut."""
    if len(codes) <= MAX_SENT_CARDS:
        return codes, None
    return codes[:MAX_SENT_CARDS], f"choose_pass returned {len(codes)} cards"


def card_answered(code: str) -> Card:
    """The card ``code`` names in a spelling the referee takes, else CardParseError in its words."""
    card = card_spelled(code)
    if card is None:
        raise CardParseError(f"{code!r} is not a card: {CARD_FORM}")
    return card


def pass_of_codes(codes: Iterable[str]) -> list[Card]:
    """The cards of a pass's codes, each spelled as the referee takes it.

    A code it would refuse raises CardParseError in the words of the referee's fault.
    """
    cards: list[Card] = []
    for code in codes:
        card = card_spelled(code)
        if card is None:
            raise CardParseError(
                f"the pass names something not a card: cannot parse card {code!r}: {CARD_FORM}"
            )
        cards.append(card)
    return cards
