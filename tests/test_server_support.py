"""Shared helpers for the server tests (no tests here): real game records made with the engine."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from arena.engine import Hand
from arena.rules import Rules
from arena.server.competition import SessionInfo
from arena.table import (
    Decision,
    GameRecord,
    HandRecord,
    TableSpec,
    Termination,
    TrickRecord,
)


def play_record(table_id: str, seats: tuple[str, ...], seed: int, board: str = "") -> GameRecord:
    """One hand played by the engine (pass the highest cards, play the lowest legal card)."""
    rules = Rules(players=len(seats))
    spec = TableSpec(
        table_id=table_id, rules=rules, seed=seed, seats=seats, board=board or str(seed)
    )
    hand = Hand.deal(rules, seed, hand_number=0, dealer=0)
    dealt = tuple(tuple(str(c) for c in hand.dealt(s)) for s in range(len(seats)))
    decisions: list[Decision] = []
    for seat in hand.seats_to_pass:
        cards = sorted(hand.hand(seat), key=lambda c: c.index)[-rules.pass_count :]
        hand.pass_cards(seat, cards)
        decisions.append(
            Decision(0, seat, "pass", len(decisions) + 1, tuple(map(str, cards)), 1.0, False)
        )
    passes = tuple(tuple(str(c) for c in (hand.passed(s) or ())) for s in range(len(seats)))
    while not hand.is_over:
        mover = hand.to_move
        assert mover is not None
        legal = hand.legal_plays()
        card = min(legal, key=lambda c: c.index)
        decisions.append(
            Decision(0, mover, "play", len(decisions) + 1, (str(card),), 1.0, len(legal) == 1)
        )
        hand.play(card)
    result = hand.result()
    tricks = tuple(
        TrickRecord(t.leader, tuple(str(c) for c in t.cards), t.winner or 0) for t in hand.tricks
    )
    totals = result.points
    placings = tuple(1 + sum(1 for o in totals if o < t) for t in totals)
    now = time.time()
    return GameRecord(
        spec=spec,
        hands=(
            HandRecord(
                number=0,
                dealer=0,
                pass_direction=hand.pass_direction.value,
                dealt=dealt,
                passes=passes,
                tricks=tricks,
                points=totals,
                moon=result.moon,
                sun=result.sun,
            ),
        ),
        decisions=tuple(decisions),
        faults=(),
        totals=totals,
        placings=placings,
        termination=Termination.NORMAL,
        seat_status=(Termination.NORMAL,) * len(seats),
        reason="played to the end",
        started_at=now - 1,
        finished_at=now,
    )


class EngineHost:
    """A table host that plays every table in-process with the engine, for testing the
    competition's own logic (matchmaking, ledger, API) apart from the network; the end-to-end
    tests use the real referee instead."""

    def __init__(self, sessions: dict[str, int]) -> None:
        self.connected = dict(sessions)
        self.busy: dict[str, int] = {}
        self.played: list[TableSpec] = []
        self.kicked: list[str] = []
        self.gate: asyncio.Event | None = None

    def sessions(self) -> list[SessionInfo]:
        """One SessionInfo per connected session."""
        out = []
        for bot, count in sorted(self.connected.items()):
            playing = self.busy.get(bot, 0)
            for i in range(count):
                out.append(SessionInfo(f"{bot}#{i}", bot, i < playing))
        return out

    async def play_table(self, spec: TableSpec) -> GameRecord:
        """Take a session per seat, play with the engine, give them back."""
        for bot in spec.seats:
            self.busy[bot] = self.busy.get(bot, 0) + 1
            assert self.busy[bot] <= self.connected.get(bot, 0), f"{bot} over-booked"
        try:
            if self.gate is not None:
                await self.gate.wait()
            else:
                await asyncio.sleep(0)
            self.played.append(spec)
            record = play_record(spec.table_id, spec.seats, spec.seed, spec.board)
            return dataclasses.replace(record, spec=spec)
        finally:
            for bot in spec.seats:
                self.busy[bot] -= 1

    def kick(self, session_id: str, reason: str) -> bool:
        """Drop one session."""
        bot, _, _ = session_id.partition("#")
        if self.connected.get(bot, 0) == 0:
            return False
        self.connected[bot] -= 1
        self.kicked.append(session_id)
        return True

    def kick_bot(self, bot: str, reason: str) -> int:
        """Drop every session of a bot."""
        count = self.connected.pop(bot, 0)
        self.kicked += [f"{bot}#{i}" for i in range(count)]
        return count
