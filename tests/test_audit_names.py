"""Bot names end to end: the longest and oddest names the rules allow, followed through a run in
a terminal, the reports, replays, logs and plots; and the names they refuse, in one line that
says what breaks the rule."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from test_arena_cli import BASE, ROOT, arena, arenas

from arena.ratings.elo import fit_by_table_size, rating_history
from arena.ratings.report import (
    MIN_AXES_INCHES,
    WIDEN_SLACK_INCHES,
    history_figure,
    ratings_figure,
)
from arena.store import load_results

SAMPLE = ROOT / "sample_bots" / "random_bot.py"
BOT = f"{sys.executable} {SAMPLE}"
# Two 64-character names (the longest allowed) alike up to their last character: a table that
# cuts names to fit a terminal shows them as one bot.
LONG_A = "long_name_" + "x" * 53 + "A"
LONG_B = "long_name_" + "x" * 53 + "B"
DOTTED = "bot.v2"  # a '.' is allowed, and TOML needs the name quoted
DIGITS = "3"  # digits only: a game number too, to `arena replay`
HANG_S = 120.0
"""A deadline only against a hang; never a measured time."""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(args: list[str], cwd: Path, columns: int = 80) -> tuple[int, str]:
    """Run ``arena ARGS`` with a pseudo-terminal of ``columns`` as its output, as a user at an
    80-column terminal sees it; its exit code and what it printed (without colours)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [*BASE, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns), "TERM": "xterm"},
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + HANG_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def test_the_longest_and_oddest_allowed_names_show_whole_everywhere(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'[bots]\n"{DOTTED}" = ["{sys.executable}", "{SAMPLE}"]\n')
    code, shown = in_terminal(
        [
            "run", "--config", str(config), "--db", "names.db", "--boards", "1",
            "--bot", f"{LONG_A}={BOT}", "--bot", f"{LONG_B}={BOT}", "--bot", f"{DIGITS}={BOT}",
        ],
        tmp_path,
    )  # fmt: skip
    assert code == 0, shown
    # Fitted to 80 columns, the faults table cut both long names to "long_name_xxx…": the end
    # of the run showed two bots as one. Every table is whole now (the terminal wraps it).
    assert "…" not in shown, shown
    faults = shown[shown.index("Faults per bot") :]
    for name in (LONG_A, LONG_B, DOTTED, DIGITS):
        assert re.search(rf"│ {re.escape(name)} +│", faults), faults

    out = tmp_path / "names-out"
    logs = sorted(p.name for p in (out / "logs").iterdir())
    assert logs == sorted(f"{n}.log" for n in (LONG_A, LONG_B, DOTTED, DIGITS))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["names-out", "names.db", "run.toml"]

    as_json, as_csv, replay, replay_json, plotted = arenas(
        tmp_path,
        [
            ["ratings", "--db", "names.db", "--format", "json"],
            ["ratings", "--db", "names.db", "--format", "csv"],
            ["replay", "--db", "names.db", DIGITS],  # the game number, not the bot
            ["replay", "--db", "names.db", "0", "--json"],
            ["ratings", "--db", "names.db", "--plot", "names.png"],
        ],
    )
    everyone = {LONG_A, LONG_B, DOTTED, DIGITS}
    assert as_json.returncode == 0, as_json.stderr
    assert {r["name"] for r in json.loads(as_json.stdout)["fits"][0]["ratings"]} == everyone
    assert as_csv.returncode == 0, as_csv.stderr
    assert {r["name"] for r in csv.DictReader(io.StringIO(as_csv.stdout))} == everyone
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.startswith(f"table b0-g0-r{DIGITS[-1]} (game {DIGITS})")
    for name in everyone:
        assert re.search(rf"seat \d {re.escape(name)} ", replay.stdout), replay.stdout
    assert replay_json.returncode == 0, replay_json.stderr
    first = json.loads(replay_json.stdout.splitlines()[0])
    assert set(first["seats"]) == everyone
    assert plotted.returncode == 0, plotted.stderr
    assert (tmp_path / "names.png").is_file() and (tmp_path / "names-history.png").is_file()

    # The plots as written: a 64-character tick label (or legend entry) took half the fixed
    # width, and the title and axis label, centred on the narrowed axes, ran off the right edge.
    results = load_results(tmp_path / "names.db")
    (fit,) = fit_by_table_size(results).values()
    for fig in (ratings_figure(fit), history_figure(rating_history(results), title="history")):
        fig.canvas.draw()  # laid out (constrained) as when saved
        box = fig.get_tightbbox()
        width = fig.get_figwidth()
        assert box.x0 >= -WIDEN_SLACK_INCHES and box.x1 <= width + WIDEN_SLACK_INCHES, (box, width)
        axes = fig.axes[0].get_position().width * width
        assert axes >= MIN_AXES_INCHES - WIDEN_SLACK_INCHES, axes


def test_a_dotted_bare_name_in_the_config_file_says_to_quote_it(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'[bots]\n{DOTTED} = "{BOT}"\n')  # TOML reads bots.bot = {{v2 = ...}}
    done = arena("run", "--config", str(config), "--db", "x.db", cwd=tmp_path)
    assert done.returncode == 2, done
    # It said "bots.bot must be a command string or a list of strings": a bot nobody wrote.
    assert done.stderr == (
        "arena: error: config file: bots.bot is a table, not a command: TOML splits a bare key "
        'at each \'.\', so for a bot named bot.v2 write "bot.v2" = "COMMAND" under [bots], in '
        'quotes (for a bot named bot: bot = "COMMAND")\n'
    )
    assert not (tmp_path / "x.db").exists()


def test_a_refused_name_says_what_in_it_breaks_the_rule(tmp_path: Path) -> None:
    too_long = "a" * 65
    runs = arenas(
        tmp_path,
        [
            ["run", "--db", "x.db", "--bot", f"café={BOT}"],
            ["run", "--db", "x.db", "--bot", f"{too_long}={BOT}"],
            ["run", "--db", "x.db", "--bot", f"my/bot={BOT}"],
            ["sprt", "--db", "x.db", "--bot", f"a={BOT}", "--bot", f"café={BOT}"],
            # The first character, which only the rule's "starting with" said.
            ["run", "--db", "x.db", "--bot", f"_b={BOT}"],
        ],
    )
    rule = (
        ": use up to 64 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit "
        "(it names the bot's log file)\n"
    )
    # "use up to 64 letters" was said of 'café', whose 'é' is a letter.
    said = ["bot name 'café' has 'é'", f"bot name {too_long!r} is 65 characters long"]
    said += [
        "bot name 'my/bot' has '/'",
        "bot name 'café' has 'é'",
        "bot name '_b' starts with '_'",
    ]
    for done, start in zip(runs, said, strict=True):
        assert done.returncode == 2, done
        assert done.stdout == "" and done.stderr == f"arena: error: {start}{rule}", done.stderr
    assert not (tmp_path / "x.db").exists()
