"""Random full hands per second: our rules engine beside OpenSpiel's hearts, in the same run.

A hand is a deal, the pass (when the hand has one), and every play, each decision a uniformly
random legal choice, then the score. Three drivers, all from Python:

- ``ours: playout``   ``Hand.deal`` then ``Hand.playout(rng)``: the fast path for Monte Carlo
                      search;
- ``ours: per move``  ``Hand.deal``, then ``pass_mask`` and ``legal_mask``/``play_index`` called
                      for every decision, as a search that chooses its own moves does;
- ``OpenSpiel``       ``pyspiel.load_game("hearts")``: chance nodes (pass direction, 52 deal
                      actions) and every decision through ``legal_actions``/``apply_action``.

Both games use the standard rules with a pass on three hands in four (ours by the cycle, OpenSpiel
by its chance node). Timing on a shared machine drifts, so the drivers run in interleaved rounds
and each figure is the median of its rounds (CPU time of this process, so other processes on the
machine disturb it less). OpenSpiel needs the optional extra: ``pip install -e '.[bench]'``.

Ours is the engine as installed, and the first line says which build ran: the engine's inner
loops (``arena._kernel``) compiled with mypyc, as setup.py builds them at install when it can, or
the Python source (no compiler at install, ``HEARTS_ARENA_PURE_ENGINE=1``, or sources edited since
the build). ``--pure`` also measures the Python source, in a second process, the same way.

Usage: ``python scripts/bench_engine.py [--seconds 1.0] [--rounds 5] [--pure]``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench_args import at_least, positive_seconds

from arena import _kernel
from arena.engine import Hand, Phase, pick_index
from arena.rules import Rules

Driver = Callable[[int, random.Random], None]
"""Plays ``count`` random hands."""


STANDARD = Rules()


def ours_playout(count: int, rng: random.Random, rules: Rules = STANDARD) -> None:
    """Deal, then finish every hand with :meth:`Hand.playout`."""
    start = rng.getrandbits(32)
    for k in range(count):
        hand = Hand.deal(rules, start, hand_number=k)
        hand.playout(rng)
        hand.result()


def ours_per_move(count: int, rng: random.Random, rules: Rules = STANDARD) -> None:
    """Deal, then one engine call per decision: ``pass_mask``, ``legal_mask``, ``play_index``."""
    start = rng.getrandbits(32)
    draw = rng.random
    pass_count = rules.pass_count
    for k in range(count):
        hand = Hand.deal(rules, start, hand_number=k)
        if hand.phase is Phase.PASS:
            for seat in range(rules.players):
                held = hand.hand_mask(seat)
                chosen = 0
                for _ in range(pass_count):
                    chosen |= 1 << pick_index(held & ~chosen, draw())
                hand.pass_mask(seat, chosen)
        legal = hand.legal_mask
        play = hand.play_index
        while hand.phase is Phase.PLAY:
            play(pick_index(legal(), draw()))
        hand.result()


def openspiel_driver() -> Driver | None:
    """A driver for OpenSpiel's hearts, or None if open-spiel is not installed."""
    try:
        import pyspiel
    except ImportError:
        return None
    game: Any = pyspiel.load_game("hearts")
    # Every chance node of hearts is uniform (pass direction, then each card dealt), so a random
    # choice among the chance node's actions samples it exactly, and costs less than
    # chance_outcomes(). Checked here on one whole deal rather than assumed.
    state = game.new_initial_state()
    while state.is_chance_node():
        probs = {p for _, p in state.chance_outcomes()}
        if max(probs) - min(probs) > 1e-12:
            raise SystemExit("OpenSpiel hearts has a non-uniform chance node; fix the driver")
        state.apply_action(state.legal_actions()[0])

    def run(count: int, rng: random.Random) -> None:
        choice = rng.choice
        for _ in range(count):
            s = game.new_initial_state()
            while not s.is_terminal():
                s.apply_action(choice(s.legal_actions()))
            s.returns()

    return run


def rate(driver: Driver, seconds: float, rng: random.Random) -> float:
    """Hands per second of ``driver`` over about ``seconds`` of this process's CPU time."""
    batch = 50
    hands = 0
    begin = time.process_time()
    while True:
        driver(batch, rng)
        hands += batch
        elapsed = time.process_time() - begin
        if elapsed >= seconds:
            return hands / elapsed


def run_pure(args: argparse.Namespace) -> int:
    """Measure the Python source of the engine in a child process; return its exit code."""
    env = {**os.environ, _kernel.PURE_ENGINE_VARIABLE: "1"}
    command = [
        sys.executable,
        __file__,
        "--seconds",
        str(args.seconds),
        "--rounds",
        str(args.rounds),
    ]
    return subprocess.run(command, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    """Measure every driver in interleaved rounds and print the medians with the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_seconds, default=1.0, help="length of one round")
    parser.add_argument("--rounds", type=at_least(1), default=5, help="rounds per driver")
    parser.add_argument(
        "--pure",
        action="store_true",
        help="also measure the Python source, if the build is compiled",
    )
    args = parser.parse_args(argv)
    drivers: dict[str, Driver] = {"ours: playout": ours_playout, "ours: per move": ours_per_move}
    spiel = openspiel_driver()
    if spiel is None:
        print("open-spiel is not installed (pip install -e '.[bench]'): ours only", file=sys.stderr)
    else:
        drivers["OpenSpiel hearts"] = spiel
    rng = random.Random(2024)
    for driver in drivers.values():  # warm up caches and the allocator
        driver(20, rng)
    rates: dict[str, list[float]] = {name: [] for name in drivers}
    for _ in range(args.rounds):
        for name, driver in drivers.items():
            rates[name].append(rate(driver, args.seconds, rng))
    anchor = statistics.median(rates["OpenSpiel hearts"]) if spiel is not None else None
    print(f"engine: {_kernel.BUILD}")
    print(f"random full hands per second, median of {args.rounds} rounds of {args.seconds:g} s CPU")
    print(f"{'driver':<18} {'hands/s':>10} {'min':>9} {'max':>9} {'vs OpenSpiel':>13}")
    for name, values in rates.items():
        median = statistics.median(values)
        ratio = f"{median / anchor:.2f}x" if anchor else "-"
        print(f"{name:<18} {median:>10.0f} {min(values):>9.0f} {max(values):>9.0f} {ratio:>13}")
    if args.pure and _kernel.COMPILED:
        print()
        return run_pure(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
