"""A bot that plays correctly but spells every card it sends its own way, for the tests of how
``arena check-bot`` reads a card.

    ARENA_ADDRESS=... ARENA_TOKEN=... ARENA_BOT_NAME=... python spelling_bot.py SPELLING

It speaks raw hearts.v1 through the generated code (the SDK sends a Card as the referee wrote it)
and answers with the lowest legal card (its pass: the three highest), respelled by SPELLING:

* spellings the protocol lists, which the referee takes: ``lower`` ("qs"), ``ten`` ("10H" for
  "TH", every other card as sent), ``padded`` (" QS\\t\\r\\n");
* spellings the engine's Card.parse takes but the referee refuses as malformed: ``nbsp``
  ("\\xa0QS", a no-break space before), ``vtab`` ("QS\\v", a vertical tab after), ``long-s``
  ("ſ" for every suit letter S, the rest as sent).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import raw_stream

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb

SPELLINGS: dict[str, Callable[[str], str]] = {
    "lower": str.lower,
    "ten": lambda code: "10" + code[1] if code[0] == "T" else code,
    "padded": lambda code: f" {code}\t\r\n",
    "nbsp": lambda code: "\xa0" + code,
    "vtab": lambda code: code + "\v",
    "long-s": lambda code: code[0] + ("ſ" if code[1] == "S" else code[1]),
}
RANKS = "23456789TJQKA"


def lowest(cards: list[str]) -> str:
    """The lowest-ranked card (the suit order breaks ties)."""
    return min(cards, key=lambda c: (RANKS.index(c[0]), "CDHS".index(c[1])))


def answer(spell: Callable[[str], str], request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    """A legal answer to ``request``, every card in it respelled."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        chosen = list(request.hand)[-request.pass_count :]
        decision.pass_cards.cards.extend(spell(code) for code in chosen)
    else:
        decision.play_card.card = spell(lowest(list(request.legal_cards)))
    return bot_pb.PlayRequest(decision=decision)


def session(spell: Callable[[str], str]) -> int | None:
    """One stream: the exit code to end with, or None to reconnect."""
    hello = bot_pb.Hello(
        bot_name=os.environ["ARENA_BOT_NAME"], token=os.environ["ARENA_TOKEN"], protocol_version=1
    )

    def reply(response: bot_pb.PlayResponse) -> bot_pb.PlayRequest | None:
        return answer(spell, response.request) if response.HasField("request") else None

    return raw_stream.session(os.environ["ARENA_ADDRESS"], hello, reply, "spelling_bot")


def main() -> int:
    """Play sessions until one says to stop."""
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    spell = SPELLINGS.get(name)
    if spell is None:
        print(f"spelling_bot: unknown spelling {name!r}; spellings: {', '.join(SPELLINGS)}")
        return raw_stream.EXIT_REFUSED
    return raw_stream.play(lambda: session(spell))


if __name__ == "__main__":
    sys.exit(main())
