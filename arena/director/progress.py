"""Live progress of a run: a rich display on a terminal, plain lines otherwise.

Both show the same figures: games stored out of the total, games per second, the time left, and
the current standings (mean points per hand, lower is better), the few best first.

A reporter whose stream is a pipe closed by its reader (``arena run 2>&1 | head -1``) falls silent
and says so in ``closed``; the director then stops the run, as a well-behaved Unix tool does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from arena.table import GameRecord

__all__ = ["PlainReporter", "RichReporter", "Standings", "StartHooks", "make_reporter"]

TOP = 5
"""Bots shown in the live standings."""
PLAIN_INTERVAL_S = 5.0
"""At most one progress line this often when not on a terminal (plus one per tenth done)."""
STEPS = 10


@dataclass
class _Line:
    hands: int = 0
    points: int = 0
    games: int = 0
    faults: int = 0
    forfeits: int = 0


class Standings:
    """Running points per hand, faults and games lost by forfeit per bot."""

    def __init__(self, bots: Sequence[str]) -> None:
        self._lines = {b: _Line() for b in bots}

    def add_totals(self, bot: str, hands: int, points: int, faults: int) -> None:
        """Count games already played (a resumed run's stored games)."""
        line = self._lines.setdefault(bot, _Line())
        line.hands += hands
        line.points += points
        line.faults += faults

    def add_forfeits(self, bot: str, forfeits: int) -> None:
        """Count games already lost by forfeit (a resumed run's stored games)."""
        self._lines.setdefault(bot, _Line()).forfeits += forfeits

    def add(self, record: GameRecord) -> None:
        """Count a finished game."""
        hands = len(record.hands)
        for seat, bot in enumerate(record.spec.seats):
            line = self._lines.setdefault(bot, _Line())
            line.hands += hands
            line.points += record.totals[seat]
            line.games += 1
            line.forfeits += record.seat_status[seat].is_forfeit
        for fault in record.faults:
            self._lines.setdefault(fault.bot, _Line()).faults += 1

    def top(self, count: int = TOP) -> list[tuple[str, float, int, int, int]]:
        """The best ``count`` bots: (name, points per hand, hands, faults, games lost by
        forfeit), fewest points per hand first."""
        rows = [
            (
                bot,
                line.points / line.hands if line.hands else math.inf,
                line.hands,
                line.faults,
                line.forfeits,
            )
            for bot, line in self._lines.items()
        ]
        rows.sort(key=lambda r: (r[1], r[0]))
        return rows[:count]

    def leader(self) -> str:
        """The best bot so far, in a few words: the fewest points per hand among the bots that
        lost fewest games by forfeit. A forfeited seat's points are the fallback's, which takes
        few: a bot that forfeited most of its games was named the leader while last in the
        ratings (where a forfeit loses to every seat that did not)."""
        rows = [r for r in self.top(len(self._lines)) if r[2]]
        if not rows:
            return "no game yet"
        fewest = min(r[4] for r in rows)
        name, per_hand, _, _, forfeits = next(r for r in rows if r[4] == fewest)
        lost = f" ({forfeits} {'game' if forfeits == 1 else 'games'} lost by forfeit)"
        return f"{name} {per_hand:.2f} pts/hand" + (lost if forfeits else "")


class _Rate:
    """Games per second over this call (resumed games do not count), from the start of its first
    game: the bots' start-up before it (seconds, for many bots on a loaded machine) made the
    first figures of a resumed run far too low, and its time left far too long."""

    def __init__(self, parallel: int = 1) -> None:
        self.started = math.inf  # no game yet: no rate
        self.count = 0
        self.parallel = max(1, parallel)
        """Tables played at once: until that many games are in, the rate is not known yet."""

    def add(self, record: GameRecord) -> None:
        """Count a game stored; play began no later than it did."""
        self.count += 1
        self.started = min(self.started, record.started_at)

    def per_second(self) -> float:
        """Games per second; 0.0 while not known. With N tables at once, the first N - 1
        games to end each came after one game's time, at a rate N times too low: a resumed
        run said 1.0/s for a run going at 5/s."""
        elapsed = time.time() - self.started
        if self.count < self.parallel or elapsed <= 0:
            return 0.0
        return self.count / elapsed


def _start_text(total: int, done: int, stops_when: str | None) -> str:
    """The line a run starts with: the games it will play, or at most (see ``stops_when``)."""
    resumed = f", {done} already stored (resuming)" if done else ""
    if stops_when is None:
        return f"{_games(total - done)} to play of {total}{resumed}"
    # The total is a cap that the run seldom reaches (arena sprt's --max-boards): "8000 games to
    # play of 8000" read as what it would play.
    if done:
        more = total - done
        return (
            f"up to {more} more game{'' if more == 1 else 's'}{resumed}; it stops when {stops_when}"
        )
    return f"up to {_games(total)} (stops when {stops_when})"


def _games(n: int) -> str:
    return f"{n} game" if n == 1 else f"{n} games"


def _rate_text(rate: float, unit: str = "/s") -> str:
    """A rate as shown: ``?`` while it is not known yet (0.0)."""
    return f"{rate:.1f}{unit}" if rate > 0 else f"?{unit}"


def _eta(left: int, rate: float) -> str:
    if rate <= 0:
        return "?"
    seconds = round(left / rate)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class PlainReporter:
    """Progress as plain lines (for logs, pipes and CI)."""

    def __init__(self, stream: TextIO, label: str = "arena", stops_when: str | None = None) -> None:
        self._stream = stream
        self._label = label
        self._stops_when = stops_when
        """What ends the run before its total, which is then a cap (None: it plays them all)."""
        self._total = 0
        self._done = 0
        self._rate = _Rate()
        self._standings = Standings(())
        self._last = 0.0
        self._step = 0
        self.closed = False
        """Whether the stream's reader has gone (a closed pipe): nothing is written any more."""

    def _print(self, text: str) -> None:
        if self.closed:
            return
        try:
            print(f"{self._label}: {text}", file=self._stream, flush=True)
        except BrokenPipeError:
            self.closed = True

    def start(self, total: int, done: int, standings: Standings, parallel: int = 1) -> None:
        """The run starts, ``parallel`` tables at a time."""
        self._total, self._done = total, done
        self._standings = standings
        self._rate = _Rate(parallel)
        self._last = time.monotonic()
        # From the tenth the stored games reached: from 0, a resumed run's first game printed a
        # line, its rate that one game's alone (1.0/s for a run going at 5/s).
        self._step = done * STEPS // max(total, 1)
        self._print(_start_text(total, done, self._stops_when))

    def game(self, record: GameRecord) -> None:
        """A game was stored."""
        self._done += 1
        self._rate.add(record)
        self._standings.add(record)
        now = time.monotonic()
        step = self._done * STEPS // max(self._total, 1)
        if now - self._last >= PLAIN_INTERVAL_S or step > self._step or self._done == self._total:
            self._last, self._step = now, step
            rate = self._rate.per_second()
            eta = _eta(self._total - self._done, rate)
            if self._stops_when is None:
                played, left = f"{self._done}/{self._total} games", f"{eta} left"
            else:  # the time to the cap, which the run seldom reaches
                played = f"{_games(self._done)} of at most {self._total}"
                left = f"at most {eta} left"
            self._print(f"{played}, {_rate_text(rate)}, {left}; {self._standings.leader()}")

    def note(self, text: str) -> None:
        """A line worth showing now."""
        self._print(text)

    def stop(self) -> None:
        """Nothing to tear down."""


class RichReporter:
    """A live progress bar with the standings under it, on a terminal."""

    def __init__(self, console: Console, stops_when: str | None = None) -> None:
        self._console = console
        self._stops_when = stops_when
        """What ends the run before its total, which is then a cap (None: it plays them all)."""
        self._progress = Progress(
            TextColumn("[bold]games" if stops_when is None else "[bold]games (at most)"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=console,
        )
        self._task = self._progress.add_task("games", total=1, rate="")
        self._standings = Standings(())
        self._rate = _Rate()
        self._live: Live | None = None
        self.closed = False
        """Always False: a terminal, not a pipe, has no reader to go away."""

    def _render(self) -> RenderableType:
        table = Table(box=None, pad_edge=False)
        # Folded onto a second line, not cut: cut to fit a terminal, two long names alike in
        # their first 50 characters showed as one.
        table.add_column("bot", overflow="fold")
        table.add_column("pts/hand", justify="right")
        table.add_column("hands", justify="right")
        table.add_column("faults", justify="right")
        table.add_column("forfeits", justify="right")
        for name, per_hand, hands, faults, forfeits in self._standings.top():
            shown = f"{per_hand:.2f}" if hands else "-"
            table.add_row(name, shown, str(hands), str(faults), str(forfeits))
        return Group(self._progress, table)

    def start(self, total: int, done: int, standings: Standings, parallel: int = 1) -> None:
        """The run starts, ``parallel`` tables at a time."""
        self._standings = standings
        self._rate = _Rate(parallel)
        self._progress.update(self._task, total=total, completed=done)
        if self._stops_when is not None:
            self._console.print(_start_text(total, done, self._stops_when), markup=False)
        elif done:
            self._console.print(f"resuming: {done} of {total} games already stored")
        self._live = Live(self._render(), console=self._console, refresh_per_second=4)
        self._live.start()

    def game(self, record: GameRecord) -> None:
        """A game was stored."""
        self._rate.add(record)
        self._standings.add(record)
        rate = _rate_text(self._rate.per_second(), " games/s")
        self._progress.update(self._task, advance=1, rate=rate)
        if self._live is not None:
            self._live.update(self._render())

    def note(self, text: str) -> None:
        """A line worth showing now (printed above the live display)."""
        self._console.print(text, markup=False, highlight=False)

    def stop(self) -> None:
        """Leave the last display on the screen."""
        if self._live is not None:
            self._live.stop()
            self._live = None


def make_reporter(
    stream: TextIO, label: str = "arena", stops_when: str | None = None
) -> PlainReporter | RichReporter:
    """A rich display if ``stream`` is a terminal, else plain lines; ``stops_when`` says what
    ends the run before its total (arena sprt: "the test decides"), which is then a cap."""
    if stream.isatty():
        return RichReporter(Console(file=stream), stops_when)
    return PlainReporter(stream, label, stops_when)


class StartHooks:
    """A reporter that reports as ``inner`` and calls ``before`` and ``after`` its start (when
    the games start): a command's header before the run's first line, a status after it."""

    def __init__(
        self,
        inner: Any,
        before: Callable[[], None] | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        self._inner = inner
        self._before = before
        self._after = after

    def start(self, total: int, done: int, standings: Any, parallel: int = 1) -> None:
        """The games start: ``before``, the inner reporter's start, then ``after``."""
        if self._before is not None:
            self._before()
        self._inner.start(total, done, standings, parallel)
        if self._after is not None:
            self._after()

    def game(self, record: GameRecord) -> None:
        """A game has been committed."""
        self._inner.game(record)

    def note(self, text: str) -> None:
        """A line worth showing."""
        self._inner.note(text)

    def stop(self) -> None:
        """The run has ended."""
        self._inner.stop()

    @property
    def closed(self) -> bool:
        """Whether the inner reporter's reader has gone."""
        return bool(self._inner.closed)
