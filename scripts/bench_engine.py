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

``--mypyc`` also compiles a copy of the same engine source with mypyc (from the dev extra; needs a
C compiler) in a temporary directory and measures it the same way in a second process: the figure
for a compiled build, which the package does not ship today.

Usage: ``python scripts/bench_engine.py [--seconds 1.0] [--rounds 5] [--mypyc]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import arena.engine
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


def compile_engine(workdir: Path) -> None:
    """Copy the ``arena`` package into ``workdir`` and compile its engine there with mypyc."""
    package = Path(arena.engine.__file__).parent
    shutil.copytree(
        package, workdir / "arena", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    engine = workdir / "arena" / "engine.py"
    source = engine.read_text()
    # mypyc cannot make a native class through cls.__new__, which the cheap copy and the deal
    # use to skip validation; an ordinary class with compiled methods is still most of the gain.
    source = source.replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nfrom mypy_extensions import mypyc_attr\n",
        1,
    ).replace("class Hand:\n", "@mypyc_attr(native_class=False)\nclass Hand:\n", 1)
    engine.write_text(source)
    subprocess.run(
        [sys.executable, "-m", "mypyc", "arena/engine.py"],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def run_compiled(args: argparse.Namespace) -> int:
    """Measure a mypyc-compiled copy of the engine in a child process; return its exit code."""
    with tempfile.TemporaryDirectory(prefix="bench-engine-mypyc-") as tmp:
        workdir = Path(tmp)
        compile_engine(workdir)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, os.environ.get("PYTHONPATH", "")])}
        command = [sys.executable, __file__, "--seconds", str(args.seconds)]
        command += ["--rounds", str(args.rounds), "--expect-compiled"]
        return subprocess.run(command, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    """Measure every driver in interleaved rounds and print the medians with the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per driver")
    parser.add_argument("--mypyc", action="store_true", help="also measure a compiled engine")
    parser.add_argument("--expect-compiled", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    compiled = not arena.engine.__file__.endswith(".py")
    if args.expect_compiled and not compiled:
        print(f"expected a compiled engine, imported {arena.engine.__file__}", file=sys.stderr)
        return 1
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
    engine = "engine compiled with mypyc" if compiled else "pure-Python engine"
    print(f"{engine}: random full hands per second, median of {args.rounds} rounds of ", end="")
    print(f"{args.seconds:g} s CPU")
    print(f"{'driver':<18} {'hands/s':>10} {'min':>9} {'max':>9} {'vs OpenSpiel':>13}")
    for name, values in rates.items():
        median = statistics.median(values)
        ratio = f"{median / anchor:.2f}x" if anchor else "-"
        print(f"{name:<18} {median:>10.0f} {min(values):>9.0f} {max(values):>9.0f} {ratio:>13}")
    if args.mypyc:
        print()
        return run_compiled(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
