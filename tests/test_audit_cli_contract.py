"""The command line as a contract, from an audit that checked every command against the README:
signals inherited ignored stay ignored (nohup, a script's `&`), a closed standard output or error
is said as such, and the admin commands' exit codes tell "try again" from "wrong request"."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_arena_cli import BASE, LOW, ROOT, arena
from test_server_support import ServerProcess

FOUR = [flag for i in range(4) for flag in ("--bot", f"b{i}={LOW}")]
SETTLE_S = 0.5
"""How long a signal is given to act (a drain starts within milliseconds of it)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db")
    yield process
    process.close()


def test_a_server_started_under_nohup_or_with_ctrl_c_ignored_keeps_serving(
    server: ServerProcess,
) -> None:
    # The server's own handlers replaced the inherited ignores: `nohup arena serve &` drained
    # and exited when the ssh session that started it dropped.
    server.start(ignoring=(signal.SIGHUP, signal.SIGINT))
    assert server.proc is not None
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGHUP):
        server.proc.send_signal(sig)
    time.sleep(SETTLE_S)
    assert server.proc.poll() is None
    assert server.get("/api/health")["status"] == "ok"
    assert server.terminate() == 0, server.errors  # SIGTERM still drains


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ratings_started_with_ctrl_c_ignored_keeps_the_ignore(tmp_path: Path) -> None:
    # A script's `arena ratings ... &` inherits SIGINT ignored; ratings set its own handler and a
    # Ctrl-C meant for the script ended it, exit 130 (the README: only run, demo and sprt heed
    # an ignored SIGINT).
    assert arena("run", *FOUR, "--boards", "1", "--db", "r.db", cwd=tmp_path).returncode == 0
    ratings = subprocess.Popen(
        [*BASE, "ratings", "--db", "r.db"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_ignoring_sigint,
    )
    try:
        while ratings.poll() is None:  # Ctrl-C after Ctrl-C, from its start to its end
            ratings.send_signal(signal.SIGINT)
            time.sleep(0.02)
        out, err = ratings.communicate(timeout=120)
    finally:
        if ratings.poll() is None:
            ratings.kill()
            ratings.communicate()
    assert ratings.returncode == 0, err
    assert "b0" in out and "interrupted" not in err


def with_closed(fd: int, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `arena ARGS` with descriptor ``fd`` closed (``>&-`` or ``2>&-``); the other of
    standard output and error is captured."""
    return subprocess.run(
        [*BASE, *args],
        cwd=cwd,
        stdout=subprocess.PIPE if fd != 1 else None,
        stderr=subprocess.PIPE if fd != 2 else None,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: os.close(fd),
        timeout=120,
        check=False,
    )


def test_a_run_with_its_standard_error_closed_stops_as_on_a_closed_pipe(tmp_path: Path) -> None:
    # `arena run ... 2>&-` exited 1 with nothing said (its progress display's AttributeError,
    # with nowhere to print its traceback), the code of a bot that keeps dying.
    for command in (["run", *FOUR, "--boards", "1"], ["demo", "--boards", "1"]):
        done = with_closed(2, *command, "--db", "x.db", cwd=tmp_path)
        assert (done.returncode, done.stdout) == (141, ""), command
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_a_check_with_its_standard_output_closed_stops_as_on_a_closed_pipe(tmp_path: Path) -> None:
    # `arena check-bot ... >&-` printed its verdicts through typer.echo, which writes nothing
    # with no standard output: every check was lost, with exit 0.
    for command in (["--list"], ["--only", "handshake", "--", *shlex.split(LOW)]):
        done = with_closed(1, "check-bot", *command, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (141, ""), command


def test_a_bots_change_with_its_output_closed_says_so_in_one_line(server: ServerProcess) -> None:
    # `arena bots ban dave >&-` made the ban, then ended in a traceback, exit 1.
    server.add_bot("dave")
    done = with_closed(1, "bots", "ban", "dave", "--db", str(server.db), "--reason", "x")
    assert (done.returncode, done.stderr) == (
        1,
        "arena: error: cannot write the output: it is closed; the change is made\n",
    )
    assert "banned" in server.cli_here("bots", "list", "--db", str(server.db))


def test_an_admin_command_that_finds_no_server_exits_1_a_wrong_token_2(
    server: ServerProcess,
) -> None:
    # Both were exit 2, the code of a bad flag: a script could not tell "try again later".
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{probe.getsockname()[1]}"  # bound, not listening
        down = server.cli("admin", "pause", "--url", nobody, "--token", "t")
    assert down.returncode == 1 and "Traceback" not in down.stderr, down.stderr
    server.admin_token()
    server.start()
    wrong = server.cli("admin", "pause", "--url", server.url, "--token", "not-the-token")
    assert wrong.returncode == 2 and "401" in wrong.stderr, wrong.stderr
