"""A random bot (drawing from :func:`arena.client.decision_rng`, seeded by its name) that writes
every view it is given to ``$ARENA_TEST_VIEWS/NAME-PID.jsonl``, for the tests that rebuild the
views of a stored game with :func:`arena.client.recorded_views` and compare them."""

import json
import os
from collections.abc import Sequence
from pathlib import Path

from arena.cards import Card
from arena.client import Bot, DecisionView, decision_rng, run

VARYING = ("game_id", "move_ms", "bank_ms", "deadline_ms", "received_at")
"""The fields of a live view that a record cannot give exactly (compared apart)."""


def fields(view: DecisionView) -> dict[str, str]:
    """The view's fields as text (reprs), the varying ones left out."""
    return {
        name: repr(getattr(view, name)) for name in view.__dataclass_fields__ if name not in VARYING
    }


class ViewLogBot(Bot):
    """Uniform among the legal cards; logs each view before answering."""

    def __init__(self) -> None:
        self.name = os.environ["ARENA_BOT_NAME"]
        folder = Path(os.environ["ARENA_TEST_VIEWS"])
        self.log = (folder / f"{self.name}-{os.getpid()}.jsonl").open("a", encoding="utf-8")

    def _write(self, view: DecisionView) -> None:
        line = {"game_id": view.game_id, "move_ms": view.move_ms, "bank_ms": view.bank_ms}
        self.log.write(json.dumps({**line, "fields": fields(view)}) + "\n")
        self.log.flush()

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        self._write(view)
        return decision_rng(self.name, view).sample(view.hand, view.pass_count)

    def choose_play(self, view: DecisionView) -> Card:
        self._write(view)
        return decision_rng(self.name, view).choice(view.legal)


if __name__ == "__main__":
    run(ViewLogBot())
