"""``arena serve`` as a process at the edges of its life: a start that fails leaves no database
behind, a server whose log can no longer be read (its pipe's reader gone) stops as SIGTERM
stops it, quietly, exit code 141, instead of running on with its log going nowhere, and a
database on a read-only file system is refused in one line."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_arena_interrupt import signalled
from test_server_support import ARENA, PORTS, REPO, ServerProcess, serve_piped

EXIT_WAIT_S = 120.0
"""How long a stopping server may take to exit (a deadline only against a hang)."""


def made(db: Path) -> list[str]:
    """The files a server makes beside ``db`` that exist."""
    names = [db.name + end for end in ("", "-wal", "-shm", ".lock")]
    return [name for name in names if (db.parent / name).exists()]


def serve_into(stdout: int | None, *args: str, shell: str = "") -> subprocess.CompletedProcess[str]:
    """``arena serve ARGS`` with its standard output on ``stdout`` (a file descriptor), or, with
    ``shell``, redirected as that shell text says (``>&-``: started with none at all)."""
    command = [*ARENA, "serve", *PORTS, *args]
    if shell:
        command = ["sh", "-c", f'exec "$@" {shell}', "sh", *command]
    return subprocess.run(
        command,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        timeout=EXIT_WAIT_S,
        check=False,
    )


def closed_pipe() -> int:
    """The write end of a pipe whose reader has gone (``| head -0``, without the race)."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_start_that_fails_at_its_banner_leaves_no_new_database(tmp_path: Path) -> None:
    # The database was made before the banner: `arena serve --db new.db | head -0` (or
    # `> /dev/full`) stopped, and left new.db behind, an empty competition that the
    # next start then took for an existing one (no "starting a new one there").
    log = ("--log", str(tmp_path / "log"))
    write = closed_pipe()
    try:
        closed = serve_into(write, "--db", str(tmp_path / "a.db"), *log)
    finally:
        os.close(write)
    assert closed.returncode == 141 and "rror" not in closed.stderr, closed.stderr
    assert made(tmp_path / "a.db") == []

    full = os.open("/dev/full", os.O_WRONLY)
    try:
        done = serve_into(full, "--db", str(tmp_path / "b.db"), *log)
    finally:
        os.close(full)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "arena: error: cannot write the output: No space left on device; the server stopped"
    )
    assert made(tmp_path / "b.db") == []


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("at", ["arena.server.app", "arena.referee.server"])
def test_a_signal_while_the_server_loads_stops_it_with_exit_0_and_nothing_made(
    tmp_path: Path, sig: str, at: str
) -> None:
    # A stop before the banner exits 0, as the README says, from the start of the command: while
    # its modules loaded, a Ctrl-C said "arena: interrupted" (130) and a SIGTERM killed it (143).
    db = tmp_path / "c.db"
    done = signalled(tmp_path, sig, at, "serve", *PORTS, "--db", str(db), hook=tmp_path / "hook")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert made(db) == []


@pytest.mark.parametrize("log", [True, False], ids=["log-file", "log-on-stderr"])
def test_a_start_with_no_standard_output_is_a_closed_pipe(tmp_path: Path, log: bool) -> None:
    # `arena serve >&-`: it made the database and served, then ended in a traceback at the
    # banner (sys.stdout is None), or, logging on standard error, in an abort of the event loop
    # as it closed a socket that had been given descriptor 1 (exit 134). Now quietly, as a
    # closed pipe, before anything is made.
    flags = ("--log", str(tmp_path / "log")) if log else ()
    none = serve_into(None, "--db", str(tmp_path / "c.db"), *flags, shell=">&-")
    assert (none.returncode, none.stderr) == (141, "")
    assert made(tmp_path / "c.db") == []


def test_a_failed_start_keeps_a_database_that_was_there(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    write = closed_pipe()
    try:
        closed = serve_into(write, "--db", str(db), "--log", str(tmp_path / "log"))
    finally:
        os.close(write)
    assert closed.returncode == 141, closed.stderr
    assert made(db) == ["comp.db"]
    listed = ServerProcess.cli_here("bots", "list", "--db", str(db), "--json")
    assert [a["name"] for a in json.loads(listed)] == ["alice"]


def admin_refused(web_port: int) -> None:
    """``POST /api/admin/pause`` with a wrong token: refused at once (401), and logged. (A pause
    itself is answered once stored, and the stop that the log's end begins may close its
    connection first.)"""
    request = urllib.request.Request(
        f"http://127.0.0.1:{web_port}/api/admin/pause",
        data=b"{}",
        method="POST",
        headers={"Authorization": "Bearer not-the-admin-token"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401


def stopped_cleanly(db: Path) -> bool:
    """Whether the server that used ``db`` stopped as a drain stops it: its lock let go, no
    table left marked running."""
    files = made(db)
    conn = sqlite3.connect(db)
    try:
        running = conn.execute("SELECT COUNT(*) FROM server_running").fetchone()
    finally:
        conn.close()
    return files == [db.name] and running == (0,)


def test_a_closed_log_pipe_stops_the_server_quietly(tmp_path: Path) -> None:
    # `arena serve 2>&1 | head -20` (or a `| jq` that died): once the log's reader had gone the
    # server served on for good with every log line failing (EPIPE, then logging's own error
    # report, also into the dead pipe), so that nobody could see what it did.
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    proc = serve_piped(db)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        banner = proc.stdout.readline()
        assert "leaderboard at http://127.0.0.1:" in banner, banner
        web_port = int(banner.rsplit(":", 1)[1].strip("/\n"))
        proc.stderr.close()  # the log's reader goes (the lines logged so far unread)
        admin_refused(web_port)  # and the server logs the refusal
        assert proc.wait(timeout=EXIT_WAIT_S) == 141
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=EXIT_WAIT_S)
        assert proc.stdout is not None
        proc.stdout.close()
    assert stopped_cleanly(db)


def test_a_log_file_whose_reader_goes_stops_the_server_and_says_so(tmp_path: Path) -> None:
    # `--log >(jq .)`: the log file is a pipe; its reader gone, the server served on unlogged.
    db = tmp_path / "comp.db"
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    # Opened for reading first (not blocking: no writer yet), so the server's open finds a reader.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    proc = serve_piped(db, "--log", str(fifo))
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "leaderboard at http://127.0.0.1:" in banner, banner
        web_port = int(banner.rsplit(":", 1)[1].strip("/\n"))
        os.close(reader)  # the log's reader goes
        reader = -1
        admin_refused(web_port)
        assert proc.wait(timeout=EXIT_WAIT_S) == 141
        _, errors = proc.communicate(timeout=EXIT_WAIT_S)
        assert errors == (
            f"arena: error: --log {fifo}: its reader has gone (a closed pipe), so the server "
            "stopped; log to a plain file and follow it with `tail -f` to keep serving whatever "
            "reads it\n"
        )
    finally:
        if reader >= 0:
            os.close(reader)
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=EXIT_WAIT_S)
    assert stopped_cleanly(db)


def read_only(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with ``folder`` read-only (a bind mount in a mount namespace of its own,
    gone with the process)."""
    mount = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    namespace = ("unshare", "--mount", "--propagation", "private")
    return subprocess.run(
        [*namespace, "sh", "-c", mount, "sh", str(folder), *command],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=EXIT_WAIT_S,
        check=False,
    )


def can_mount(tmp_path: Path) -> bool:
    """Whether this process may make a folder read-only in a namespace of its own (root)."""
    try:
        return read_only(tmp_path, "true").returncode == 0
    except OSError:  # no unshare
        return False


def test_a_database_on_a_read_only_file_system_is_one_line(tmp_path: Path) -> None:
    # The look for a batch run's database removed the -wal and -shm files it might have made,
    # missing ones too: on a read-only file system that fails (EROFS, not "no such file"), so
    # `arena bots list` ended in a traceback and `arena serve` said only
    # "[Errno 30] Read-only file system: '.../comp.db-wal'".
    if not can_mount(tmp_path):
        pytest.skip("needs unshare and mount (root) to make a read-only file system")
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    empty = tmp_path / "empty.db"
    empty.touch()  # an empty file (`touch comp.db`) read as a database to make: a traceback
    new = tmp_path / "new.db"  # none yet: "cannot open or create a database there" alone
    for command in (
        ("bots", "add", "bob", "--db", str(db)),
        ("admin", "token", "--db", str(db)),
        ("bots", "add", "bob", "--db", str(empty)),
        ("bots", "add", "bob", "--db", str(new)),
        ("serve", "--db", str(db), *PORTS),
    ):
        done = read_only(tmp_path, *ARENA, *command)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.startswith("arena: error: --db ") or done.stderr.startswith(
            f"arena: error: {command[-1] if command[0] == 'bots' else db}: "
        ), (command, done.stderr)
        assert done.stderr.count("\n") == 1 and "Errno" not in done.stderr, done.stderr
        if command[:2] == ("bots", "add"):
            # Not "cannot open or create a database there": the file is there, its folder
            # (where SQLite makes the journal) is what refuses.
            said = done.stderr
            assert ("read-only" in said or "readonly" in said) and "Traceback" not in said, said
    # Listing only reads, as `arena ratings` does: it failed, the account store opening for writing.
    listed = read_only(tmp_path, *ARENA, "bots", "list", "--json", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    assert [bot["name"] for bot in json.loads(listed.stdout)] == ["alice"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["comp.db", "empty.db"]  # nothing beside


def test_the_log_file_is_opened_anew_when_it_is_moved_or_deleted(tmp_path: Path) -> None:
    # logrotate (its default, `create`) renames the log and makes a new one: the server wrote on
    # into the renamed file for ever, and the new one stayed empty.
    server = ServerProcess(tmp_path / "c.db")
    log = server.log

    def refused(name: str) -> None:
        """A bot with a wrong token, whose refusal the server logs with the name it gave."""
        bot = server.bot(name, "not-a-token", sample="lowcard")
        bot.wait(timeout=EXIT_WAIT_S)
        server.wait_for(lambda: log.exists() and name in log.read_text())

    try:
        server.start()
        server.wait_for(lambda: '"serving"' in log.read_text())
        moved = log.rename(tmp_path / "c.log.1")
        refused("after-move")
        assert '"serving"' in moved.read_text() and "after-move" not in moved.read_text()
        log.unlink()
        refused("after-delete")
        assert server.terminate() == 0, server.errors
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert "after-move" not in log.read_text() and lines[-1]["msg"] == "stopped"
    finally:
        server.close()


def test_a_hangup_drains_and_stops_the_server_as_sigterm_does(tmp_path: Path) -> None:
    # A server started in an ssh session without nohup got SIGHUP when the session dropped: it
    # died at once (exit 129), no line in its log, its running table recorded as a crash later.
    server = ServerProcess(tmp_path / "c.db")
    try:
        server.start()
        assert server.proc is not None
        server.proc.send_signal(signal.SIGHUP)
        assert server.proc.wait(timeout=EXIT_WAIT_S) == 0
        server.proc.communicate()
        lines = [json.loads(line) for line in server.log.read_text().splitlines()]
        assert any(line["msg"] == "signal" and line["signal"] == "SIGHUP" for line in lines)
        assert lines[-1]["msg"] == "stopped"
    finally:
        server.close()
