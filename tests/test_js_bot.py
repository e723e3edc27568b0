"""The Node.js sample bot: whole games through the real referee beside Python bots, and a clean
`arena check-bot` run.

It needs Node.js, npm and its dependencies (`npm ci` in sample_bots/js, which scripts/test.sh
runs). Without them these tests are skipped with a message saying what to install, except in CI
(CI=true), where a missing Node.js is a failure: CI must prove the promise of bots in any language.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import make_certs
import pytest
from loopback import closing_port

from arena.checkbot.driver import CheckOptions
from arena.checkbot.run import run_check
from arena.checkbot.scenarios import SCENARIOS
from arena.referee import Referee, RefereeConfig, RefereeThread, TlsConfig, TokenAccounts
from arena.rules import Rules
from arena.table import GameRecord, TableSpec, Termination

ROOT = Path(__file__).resolve().parent.parent
JS_DIR = ROOT / "sample_bots" / "js"
JS_BOT = JS_DIR / "bot.js"
JS_PACKAGE = JS_DIR / "package.json"
LOBBY_WAIT_MS = 30_000
SEED = 7
EXIT_WAIT_S = 10.0
RUN_TIMEOUT_S = 120.0
GIVE_UP_WAIT_S = 30.0  # a bot that should exit at once but retries is stopped after this
# check-bot's wait for a refused bot to end: its default 5 s is too short on a loaded host.
PATIENT = CheckOptions(exit_timeout_s=GIVE_UP_WAIT_S)
PYTHON_BOTS = {
    "lowcard": ROOT / "sample_bots" / "lowcard.py",
    "heuristic": ROOT / "sample_bots" / "heuristic.py",
    "random": ROOT / "sample_bots" / "random_bot.py",
}


def require_node() -> str:
    """The node executable, or skip (fail under CI=true) saying what to install."""
    node, npm = shutil.which("node"), shutil.which("npm")
    reason = ""
    if node is None or npm is None:
        reason = "Node.js and npm are needed: install Node.js 18 or newer (with npm)"
    elif not (JS_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        reason = "the JS bot's dependencies are missing: run `npm ci` in sample_bots/js"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the Node.js bot must be tested)")
        pytest.skip(reason)
    assert node is not None
    return node


async def play_tables(
    node: str,
    log_dir: Path,
    config: RefereeConfig | None = None,
    settings: dict[str, str] | None = None,
    games: int = 2,
) -> tuple[list[GameRecord], list[int | None]]:
    """Full games (two by default), the JS bot in a different seat in each, at a referee with
    ``config``, every bot given the ``settings`` (ARENA_* variables); the records and the bots'
    exit codes."""
    commands = {"js": [node, str(JS_BOT)]} | {
        name: [sys.executable, str(path)] for name, path in PYTHON_BOTS.items()
    }
    tokens = {name: secrets.token_hex(16) for name in commands}
    referee = Referee(config, accounts={token: name for name, token in tokens.items()})
    port = await referee.start("127.0.0.1:0")
    processes = []
    for name, command in commands.items():
        env = {
            **os.environ,
            "ARENA_ADDRESS": f"127.0.0.1:{port}",
            "ARENA_TOKEN": tokens[name],
            "ARENA_BOT_NAME": name,
            **(settings or {}),
        }
        with (log_dir / f"{name}.log").open("wb") as log:
            processes.append(
                await asyncio.create_subprocess_exec(
                    *command, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
                )
            )
    try:
        assert await referee.wait_for_bots(list(commands), LOBBY_WAIT_MS), "bots did not connect"
        records = []
        rotations = (
            ("js", "lowcard", "heuristic", "random"),
            ("heuristic", "random", "js", "lowcard"),
        )
        for i, seats in enumerate(rotations[:games]):
            spec = TableSpec(
                table_id=f"js-{i}",
                rules=Rules(),
                seed=SEED,
                seats=seats,
                board=str(SEED),
                hands=None,
            )
            records.append(await referee.play_table(spec))
    finally:
        # As the arena director does: SIGTERM each bot, then stop the referee.
        codes: list[int | None] = []
        for process in processes:
            if process.returncode is None:
                process.terminate()
            try:
                async with asyncio.timeout(EXIT_WAIT_S):
                    codes.append(await process.wait())
            except TimeoutError:
                process.kill()
                await process.wait()
                codes.append(None)
        await referee.stop()
    return records, codes


def test_js_bot_plays_whole_games_beside_python_bots(tmp_path: Path) -> None:
    node = require_node()
    records, codes = asyncio.run(play_tables(node, tmp_path))
    for record in records:
        js = record.spec.seats.index("js")
        assert record.termination is Termination.NORMAL, record.reason
        assert record.seat_status == (Termination.NORMAL,) * 4, record.reason
        assert record.faults == (), record.faults
        assert max(record.totals) >= record.spec.rules.target  # a whole game, not one hand
        asked = [d for d in record.decisions if d.seat == js and not d.forced]
        assert len(asked) >= len(record.hands) * 5  # it decided, hand after hand
        assert all(d.fault is None for d in asked)
    js_log = (tmp_path / "js.log").read_text()
    assert "FAULT" not in js_log
    assert "connected to 127.0.0.1:" in js_log
    # On SIGTERM the JS bot says Goodbye and exits with code 0.
    assert codes[0] == 0, (codes, js_log)


def test_js_bot_passes_check_bot(tmp_path: Path) -> None:
    node = require_node()
    report = run_check([node, str(JS_BOT)], PATIENT, log=tmp_path / "log")
    assert report.passed, "\n".join(r.line() for r in report.failures)
    assert [r.scenario for r in report.results] == [s.name for s in SCENARIOS]
    # The fault notices check: the bot logged the FaultNotice it was sent, and played on.
    log = (tmp_path / "log").read_text()
    assert re.search(r"FAULT FAULT_KIND_DISCONNECT in hand 0, request 0.*played instead", log), log


def test_js_bot_runs_under_arena_run_beside_python_bots(tmp_path: Path) -> None:
    node = require_node()
    arena = Path(sys.executable).with_name("arena")
    python = sys.executable
    bots = [f"js={node} {JS_BOT}"] + [
        f"{name}={python} {path}" for name, path in PYTHON_BOTS.items()
    ]
    command = [str(arena), "run", "--boards", "1", "--db", str(tmp_path / "run.db")]
    for bot in bots:
        command += ["--bot", bot]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 of 4 games" in done.stdout, done.stdout
    js_log = (tmp_path / "run-out" / "logs" / "js.log").read_text()
    assert "connected to 127.0.0.1:" in js_log
    assert "FAULT" not in js_log


def test_a_copy_of_the_js_bot_whose_strategy_throws_answers_and_logs_an_error(
    tmp_path: Path,
) -> None:
    # The template called its strategy bare: one exception killed the process, the game was
    # forfeited, and four in a row stopped the run (the Python SDK answers for the bot's code).
    node = require_node()
    copy = tmp_path / "mine" / "js" / "bot.js"  # its proto at ../../proto, as in the repository
    copy.parent.mkdir(parents=True)
    (tmp_path / "proto").symlink_to(ROOT / "proto")
    source = JS_BOT.read_text()
    strategy = "function choosePlay(request) {\n"
    assert source.count(strategy) == 1
    copy.write_text(
        source.replace(
            strategy,
            # It empties the cards it was given first: the fallback answers the request as sent.
            strategy + "if (request.legal_cards.length > 2) {\n"
            "  request.legal_cards.length = 0;\n"
            '  throw new Error("a bug of mine");\n}\n',
        ).replace(
            "function choosePass(request) {\n",
            # Every other pass throws, the others are one string where a list goes (which
            # could not be sent: the stream broke, and the bot reconnected to the same request
            # until its time bank was gone).
            "function choosePass(request) {\n  globalThis.passes = (globalThis.passes || 0) + 1;\n"
            "  if (globalThis.passes % 2) {\n    request.hand.length = 0;\n"
            '    throw new TypeError("no pass yet");\n  }\n'
            '  return request.hand.slice(0, request.pass_count).join(" ");\n',
        )
    )
    arena = Path(sys.executable).with_name("arena")
    command = [str(arena), "run", "--boards", "1", "--db", str(tmp_path / "run.db")]
    for bot in [f"js={node} {copy}"] + [
        f"{n}={sys.executable} {p}" for n, p in PYTHON_BOTS.items()
    ]:
        command += ["--bot", bot]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        env={**os.environ, "NODE_PATH": str(JS_DIR / "node_modules")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 of 4 games" in done.stdout, done.stdout
    log = (tmp_path / "run-out" / "logs" / "js.log").read_text()
    errors = [line for line in log.splitlines() if re.search(r"\bERROR\b", line)]
    passes = [e for e in errors if "ERROR choosePass on request " in e and "fallbackPass: it" in e]
    threw = [e for e in passes if e.endswith("it threw TypeError: no pass yet")]
    sent = [e for e in passes if "it returned " in e and "not a list of card codes" in e]
    plays = [e for e in errors if "ERROR choosePlay" in e and "it threw Error: a bug of mine" in e]
    # Each process counts its own passes, its first throwing: 2 and 2, or 3 and 1 when one of
    # the bot's two processes made three of the four passes.
    assert len(passes) == 4 and len(threw) + len(sent) == 4 and len(threw) >= 2, log
    assert len(sent) >= 1, log
    assert plays and len(passes) + len(plays) == len(errors), log
    assert "reconnecting" not in log
    assert "FAULT" not in log and "exited" not in done.stderr, done.stderr
    assert f"bot 'js': its log has {len(errors)} errors" in done.stdout + done.stderr


def _self_signed(directory: Path, names: str = "DNS:localhost,IP:127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate for ``names`` (a subjectAltName), made with the openssl CLI
    (or skip)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = directory / "referee.pem", directory / "referee.key"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=x"),
            *("-addext", f"subjectAltName={names}"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def first_retry_line(
    node: str, address: str, env: dict[str, str], marker: str = "reconnecting in"
) -> str:
    """The JS bot's first line holding ``marker`` (by default, about a failed connection: it
    retries); the bot is then stopped."""
    environment = {
        **os.environ,
        "ARENA_ADDRESS": address,
        "ARENA_TOKEN": "t",
        "ARENA_BOT_NAME": "js",
        **env,
    }
    for name in ("ARENA_TLS", "ARENA_TLS_CA", "ARENA_TLS_CERT", "ARENA_TLS_KEY"):
        if name not in env:
            environment.pop(name, None)
    proc = subprocess.Popen([node, str(JS_BOT)], env=environment, stderr=subprocess.PIPE, text=True)
    stopper = threading.Timer(RUN_TIMEOUT_S, proc.kill)
    stopper.start()
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if marker in line:
                return line.strip()
        raise AssertionError(f"the JS bot exited without a line holding {marker!r}")
    finally:
        stopper.cancel()
        proc.kill()
        proc.communicate()


def test_js_bot_removed_by_the_referee_says_so_last(tmp_path: Path) -> None:
    # Its last line was the Shutdown's enum name and message; the Python SDK's says who removed
    # which bot, and why.
    node = require_node()
    accounts = TokenAccounts()
    token = accounts.issue("js")
    with RefereeThread(RefereeConfig(), accounts) as referee:
        port = referee.start("127.0.0.1:0")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env = {"ARENA_ADDRESS": f"127.0.0.1:{port}", "ARENA_TOKEN": token, "ARENA_BOT_NAME": "js"}
        proc = subprocess.Popen(
            [node, str(JS_BOT)], env={**environment, **env}, stderr=subprocess.PIPE, text=True
        )
        try:
            assert referee.wait_for_bots(["js"], 30_000)
            assert referee.call(lambda r: r.kick_bot("js", "banned: plays too slowly")) == 1
            _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"js: the referee at 127.0.0.1:{port} removed bot 'js': banned: plays too slowly"
    ), err


def test_js_bot_names_the_tls_setting_when_plain_text_meets_a_tls_referee(tmp_path: Path) -> None:
    # grpc-js says only "Failed to connect": the bot says which of its variables to change, as the
    # Python SDK does, and retries (a restarting plain-text referee looks the same).
    node = require_node()
    cert, key = _self_signed(tmp_path)
    config = RefereeConfig(tls=TlsConfig.from_files(cert, key))
    with RefereeThread(config, TokenAccounts()) as referee:
        referee.start("127.0.0.1:0")
        line = first_retry_line(node, f"127.0.0.1:{referee.port}", {})
    hint = "if the referee uses TLS, set ARENA_TLS=1 (or ARENA_TLS_CA to the CA"
    assert f"cannot connect to 127.0.0.1:{referee.port}" in line and hint in line, line


@pytest.mark.parametrize(
    ("referee_tls", "bot_env", "hint"),
    [
        (
            False,
            {"ARENA_TLS": "1"},
            "the referee does not speak TLS on this port: unset ARENA_TLS (or",
        ),
        # Told to unset the variables it set: it was told "ARENA_TLS and ARENA_TLS_CA".
        (
            False,
            {"ARENA_TLS_CERT": "{cert}", "ARENA_TLS_KEY": "{key}"},
            "the referee does not speak TLS on this port: unset ARENA_TLS_CERT and ARENA_TLS_KEY",
        ),
        (True, {"ARENA_TLS": "1"}, "the referee's certificate is not trusted: set ARENA_TLS_CA"),
    ],
    ids=["tls-bot-plain-referee", "client-certificate-plain-referee", "untrusted-certificate"],
)
def test_js_bot_refuses_a_tls_mismatch_at_the_first_connection(
    tmp_path: Path, referee_tls: bool, bot_env: dict[str, str], hint: str
) -> None:
    # As the Python SDK does: ARENA_TLS at a port that does not speak TLS, or a certificate that
    # is not trusted, fails the same way on every retry, so one line and exit code 2 at once
    # (it used to retry, with the hint, until ARENA_GIVE_UP_S ran out).
    node = require_node()
    cert, key = _self_signed(tmp_path)
    config = RefereeConfig(tls=TlsConfig.from_files(cert, key) if referee_tls else None)
    with RefereeThread(config, TokenAccounts()) as referee:
        referee.start("127.0.0.1:0")
        address = f"127.0.0.1:{referee.port}"
        settings = {k: v.format(cert=cert, key=key) for k, v in bot_env.items()}
        done = run_js_bot(node, {"ARENA_ADDRESS": address, **settings})
    assert done.returncode == 2, done.stderr
    # The bot's line alone: Node.js's warning that grpc-js names an IP address as the TLS
    # server name (DEP0123) is dropped by the bot.
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"js: cannot connect to {address} (UNAVAILABLE)"), done.stderr
    assert hint in lines[0], done.stderr


def test_js_bot_refuses_a_certificate_for_another_host(tmp_path: Path) -> None:
    # A trusted certificate that does not name the address's host (ERR_TLS_CERT_ALTNAME_INVALID)
    # fails every retry the same way: it was retried for ten minutes with no word of what to
    # change. As the Python SDK does: one line and exit code 2.
    node = require_node()
    cert, key = _self_signed(tmp_path, "DNS:referee.example")
    config = RefereeConfig(tls=TlsConfig.from_files(cert, key))
    with RefereeThread(config, TokenAccounts()) as referee:
        referee.start("127.0.0.1:0")
        address = f"127.0.0.1:{referee.port}"
        done = run_js_bot(node, {"ARENA_ADDRESS": address, "ARENA_TLS_CA": str(cert)})
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("js:")]
    assert lines == [
        f"js: cannot connect to {address} (UNAVAILABLE): the referee's certificate is not for "
        "the host 127.0.0.1: set ARENA_ADDRESS to a host name the certificate holds (the "
        "organiser gives it)"
    ], done.stderr


def test_js_bot_refuses_a_ca_file_that_holds_no_certificate(tmp_path: Path) -> None:
    # A PEM file with no certificate in it (a key, here) was taken as the CA: every connection
    # then failed as if the referee's certificate were untrusted, telling the author to set the
    # very variable that was set. The Python SDK refuses it at start.
    node = require_node()
    _, key = _self_signed(tmp_path)
    done = run_js_bot(
        node, {"ARENA_ADDRESS": f"127.0.0.1:{closed_port()}", "ARENA_TLS_CA": str(key)}
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"js: the TLS CA certificate '{key}' holds no usable certificate "
        "(no -----BEGIN CERTIFICATE----- block that parses)\n"
    ), done.stderr


def test_js_bot_gives_no_tls_hint_when_nothing_listens(tmp_path: Path) -> None:
    node = require_node()
    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = first_retry_line(node, f"127.0.0.1:{port}", {})
    assert "ECONNREFUSED" in line and "TLS" not in line, line


def test_js_bot_is_told_which_name_its_token_has() -> None:
    # As the Python SDK does: the token decides the name in standings, so a different
    # ARENA_BOT_NAME is worth a warning.
    node = require_node()
    with RefereeThread(RefereeConfig(), TokenAccounts({"t": "lowcard"})) as referee:
        referee.start("127.0.0.1:0")
        line = first_retry_line(
            node, f"127.0.0.1:{referee.port}", {"ARENA_BOT_NAME": "zed"}, "warning:"
        )
    assert line == (
        "zed: warning: the referee knows this token as bot 'lowcard', not 'zed' "
        "(ARENA_BOT_NAME): standings and records show 'lowcard'"
    ), line


def test_js_bot_whose_hello_is_over_the_referees_limit_exits_2_at_once() -> None:
    # A token of 100 kB: RESOURCE_EXHAUSTED was retried until ARENA_GIVE_UP_S, though the same
    # Hello could never fit.
    node = require_node()
    token = "t" * 100_000
    with RefereeThread(RefereeConfig(), TokenAccounts({"t": "lowcard"})) as referee:
        referee.start("127.0.0.1:0")
        done = run_js_bot(
            node, {"ARENA_ADDRESS": f"127.0.0.1:{referee.port}", "ARENA_TOKEN": token}
        )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "(RESOURCE_EXHAUSTED)" in line and "over this referee's limit" in line, line
    assert token not in line


def closed_port() -> int:
    """A port that was free a moment ago: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_js_bot(node: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The JS bot run to its end with ``env`` over a clean environment (a bot that would retry
    for minutes instead is stopped, and the test fails saying so)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    try:
        return subprocess.run(
            [node, str(JS_BOT)],
            env={**environment, "ARENA_TOKEN": "t", "ARENA_BOT_NAME": "js", **env},
            capture_output=True,
            text=True,
            timeout=GIVE_UP_WAIT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the JS bot kept retrying: {e.stderr!r}") from None


def test_js_bot_gives_up_after_arena_give_up_s() -> None:
    # `arena run` sets ARENA_GIVE_UP_S=15 so that a bot whose director was killed does not
    # linger; the JS bot retried for its own ten minutes whatever the variable said.
    node = require_node()
    done = run_js_bot(node, {"ARENA_ADDRESS": f"127.0.0.1:{closed_port()}", "ARENA_GIVE_UP_S": "0"})
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("js: giving up: no session with the referee") and "0 s" in last, last


def test_js_bot_reads_its_address_as_the_python_sdk_does() -> None:
    # Spaces around the address were refused ("expected the referee's HOST:PORT") where the
    # Python SDK ignores them; a host name not found was retried without a word on what to check
    # (grpc-js's words for it, as seen: the test makes no DNS query).
    node = require_node()
    port = closed_port()
    spaced = run_js_bot(node, {"ARENA_ADDRESS": f" 127.0.0.1:{port} ", "ARENA_GIVE_UP_S": "0"})
    assert spaced.returncode == 1, spaced.stderr
    assert f"no session with the referee at 127.0.0.1:{port} " in spaced.stderr
    details = "Name resolution failed for target dns:nosuchhost.invalid:5000"
    script = f"console.log(require({str(JS_BOT)!r}).unknownHostHint({details!r}))"
    hint = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True)
    assert hint.stdout == (
        ": no such host; check the host name in ARENA_ADDRESS (the organiser gives it)\n"
    )


def test_js_bot_welcomed_in_plain_text_is_not_told_to_turn_tls_on() -> None:
    # As the Python SDK: a referee restarting behind a port forwarder hangs up as a TLS one
    # does on plain text, and the hint was given after plain text had worked in this run.
    node = require_node()
    details = "failed to connect to all addresses; last error: UNKNOWN: Failed to connect"
    hints = []
    for first in ("true", "false"):
        script = (
            f"console.log(JSON.stringify(require({str(JS_BOT)!r})"
            f".tlsHint({details!r}, '127.0.0.1:1', {first})))"
        )
        done = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True)
        hints.append(json.loads(done.stdout))
    assert "ARENA_TLS=1" in hints[0] and hints[1] == "", hints


def test_js_bot_never_waits_past_arena_give_up_s() -> None:
    # It checked the limit only after each back-off wait: a 15 s ARENA_GIVE_UP_S gave up after
    # about 20 s. Its waits (100 ms doubling) now stop at the limit, as the Python SDK's do.
    node = require_node()
    env = {"ARENA_ADDRESS": f"127.0.0.1:{closed_port()}", "ARENA_GIVE_UP_S": "2"}
    done = run_js_bot(node, env)
    assert done.returncode == 1, done.stderr
    waits = [int(w) for w in re.findall(r"; reconnecting in (\d+) ms", done.stderr)]
    assert len(waits) >= 4 and sum(waits) <= 2000, waits


def test_js_bot_gives_up_on_time_at_an_address_that_takes_connections_but_never_answers() -> None:
    # A stopped referee takes TCP connections and says nothing: the JS bot waited on its first
    # stream for ever (no keepalive, no wait for the Welcome), whatever ARENA_GIVE_UP_S said.
    node = require_node()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes the connections; nothing ever answers
        env = {"ARENA_ADDRESS": f"127.0.0.1:{silent.getsockname()[1]}", "ARENA_GIVE_UP_S": "1"}
        done = run_js_bot(node, env)  # stopped after GIVE_UP_WAIT_S, failing, as before
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("js: giving up: no session with the referee") and (
        "(ARENA_GIVE_UP_S; last: DEADLINE_EXCEEDED: no Welcome within 5 s of connecting" in last
    ), last


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"ARENA_TLS_CA": "/no/such/ca.pem"},
            "cannot read the TLS CA certificate '/no/such/ca.pem'",
        ),
        ({"ARENA_TLS_CA": str(JS_PACKAGE)}, f"certificate '{JS_PACKAGE}' is not a PEM file"),
        ({"ARENA_ADDRESS": "http://127.0.0.1:9"}, "HOST:PORT without http://, e.g. 127.0.0.1:9"),
        (
            {"ARENA_ADDRESS": "referee.example"},
            "'referee.example': expected the referee's HOST:PORT",
        ),
        # grpc-js read it as host "::1:50051" on port 443, and retried it for minutes.
        ({"ARENA_ADDRESS": "::1:50051"}, "an IPv6 address goes in brackets, [::1]:50051"),
        # Each retried for ten minutes, where the Python SDK exits 2 at once.
        ({"ARENA_ADDRESS": "bot@host:5000"}, "'bot@host:5000': that host is not a valid host"),
        ({"ARENA_ADDRESS": "a..b:5000"}, "'a..b:5000': that host is not a valid host name"),
        ({"ARENA_ADDRESS": "h\u00e9llo:5000"}, "that host is not a valid host name"),
        (
            {"ARENA_ADDRESS": "[127.0.0.1]:5000"},
            "only an IPv6 address goes in brackets, and '127.0.0.1' is not one",
        ),
        ({"ARENA_GIVE_UP_S": "soon"}, "ARENA_GIVE_UP_S must be a number of seconds"),
        # Number() read it as 16 s; Python's float() refuses it.
        ({"ARENA_GIVE_UP_S": "0x10"}, "ARENA_GIVE_UP_S must be a number of seconds"),
        # It tried localhost:50051 as "js-bot" for ten minutes; the Python SDK says this.
        (
            {"ARENA_ADDRESS": "", "ARENA_BOT_NAME": ""},
            "js-bot: set ARENA_ADDRESS and ARENA_BOT_NAME: the referee's host:port, its name\n",
        ),
        ({"ARENA_TOKEN": ""}, "js: set ARENA_TOKEN: the bot's token\n"),
        # Past the referee's message limit: retried as a transient failure for ten minutes.
        (
            {"ARENA_BOT_NAME": "n" * 100_000},
            "js-bot: ARENA_BOT_NAME is 100000 characters long: a bot's name is 1 to 64",
        ),
    ],
    ids=[
        "missing-ca",
        "ca-not-pem",
        "url",
        "no-port",
        "ipv6-unbracketed",
        "at-sign",
        "empty-label",
        "not-ascii",
        "ipv4-bracketed",
        "give-up-not-a-number",
        "give-up-hexadecimal",
        "no-address-nor-name",
        "no-token",
        "name-too-long",
    ],
)
def test_js_bot_refuses_a_bad_setting_in_one_line(env: dict[str, str], says: str) -> None:
    # As the Python SDK does: one line and exit code 2, not a stack trace (an unreadable CA file)
    # nor ten minutes of retries (an address no referee can be at).
    node = require_node()
    done = run_js_bot(node, {"ARENA_ADDRESS": f"127.0.0.1:{closed_port()}", **env})
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


# ---- client certificates (mutual TLS) ------------------------------------------------------


@pytest.fixture(scope="module")
def client_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of certificates: ``ca`` signed ``server`` and ``client``; ``stranger`` is a
    client certificate of another CA; ``locked.key`` is client.key under a pass phrase."""
    return make_certs.mutual_tls(tmp_path_factory.mktemp("client-certs"))


def mutual_config(certs: Path) -> RefereeConfig:
    """A referee that requires a client certificate signed by ``ca``."""
    tls = TlsConfig.from_files(
        certs / "server.pem", certs / "server.key", certs / "ca.pem", require_client_cert=True
    )
    return RefereeConfig(tls=tls)


def tls_settings(certs: Path, name: str | None = None) -> dict[str, str]:
    """The TLS variables: trust ``ca``; with ``name``, send NAME.pem and its key NAME.key."""
    env = {"ARENA_TLS_CA": str(certs / "ca.pem")}
    if name is not None:
        env |= {
            "ARENA_TLS_CERT": str(certs / f"{name}.pem"),
            "ARENA_TLS_KEY": str(certs / f"{name}.key"),
        }
    return env


def test_js_bot_with_a_client_certificate_plays_at_a_referee_that_requires_one(
    tmp_path: Path, client_certs: Path
) -> None:
    # ARENA_TLS_CERT and ARENA_TLS_KEY, as the Python SDK takes them (its bots play alongside).
    node = require_node()
    settings = tls_settings(client_certs, "client")
    config = mutual_config(client_certs)
    records, codes = asyncio.run(play_tables(node, tmp_path, config, settings, games=1))
    (record,) = records
    assert record.termination is Termination.NORMAL, record.reason
    assert record.seat_status == (Termination.NORMAL,) * 4, record.reason
    assert record.faults == (), record.faults
    assert max(record.totals) >= record.spec.rules.target  # a whole game, not one hand
    js_log = (tmp_path / "js.log").read_text()
    assert "connected to 127.0.0.1:" in js_log, js_log
    assert codes[0] == 0, (codes, js_log)


@pytest.mark.parametrize(
    ("pair", "hint"),
    [
        (
            None,
            "the referee asks for a client certificate: set ARENA_TLS_CERT and ARENA_TLS_KEY to "
            "the certificate and key the organiser gives",
        ),
        (
            "stranger",
            "the referee refused the client certificate in ARENA_TLS_CERT (not signed by a CA it "
            "trusts, or out of date): set ARENA_TLS_CERT and ARENA_TLS_KEY to the certificate "
            "and key the organiser gives",
        ),
    ],
    ids=["no-certificate", "certificate-of-another-ca"],
)
def test_js_bot_refused_for_its_client_certificate_says_so_at_the_first_connection(
    client_certs: Path, pair: str | None, hint: str
) -> None:
    # grpc-js says only "Failed to connect" (the referee hangs up once the TLS handshake is done),
    # as for a network failure: the bot retried for ten minutes with no word of ARENA_TLS_CERT.
    # One more connection of its own tells the two apart, as the Python SDK does.
    node = require_node()
    with RefereeThread(mutual_config(client_certs), TokenAccounts()) as referee:
        referee.start("127.0.0.1:0")
        address = f"127.0.0.1:{referee.port}"
        done = run_js_bot(node, {"ARENA_ADDRESS": address, **tls_settings(client_certs, pair)})
    assert done.returncode == 2, done.stderr
    # The bot's line alone (Node.js's DEP0123 warning, an IP address as TLS server name, dropped).
    assert done.stderr.splitlines() == [f"js: cannot connect to {address} (UNAVAILABLE): {hint}"], (
        done.stderr
    )


def test_js_bot_retries_a_tls_hang_up_naming_the_client_certificate(client_certs: Path) -> None:
    # A connection cut during the TLS handshake may be a restart: retried, as before, but the line
    # names the client certificate's variables, since a referee that wants one is cut short too.
    node = require_node()
    with closing_port() as port:
        line = first_retry_line(node, f"127.0.0.1:{port}", tls_settings(client_certs))
    hint = "if the referee asks for a client certificate, set ARENA_TLS_CERT and ARENA_TLS_KEY"
    assert hint in line, line


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (
            {"ARENA_TLS_CERT": "client.pem"},
            "ARENA_TLS_CERT is set but ARENA_TLS_KEY is not: set ARENA_TLS_KEY to the client "
            "certificate's private key, or unset ARENA_TLS_CERT",
        ),
        (
            {"ARENA_TLS_KEY": "client.key"},
            "ARENA_TLS_KEY is set but ARENA_TLS_CERT is not: set ARENA_TLS_CERT to the client "
            "certificate, or unset ARENA_TLS_KEY",
        ),
        (
            {"ARENA_TLS": "0", "ARENA_TLS_CERT": "client.pem", "ARENA_TLS_KEY": "client.key"},
            "ARENA_TLS=0 asks for plain text, but ARENA_TLS_CERT asks for TLS: unset ARENA_TLS "
            "to connect with TLS, or unset ARENA_TLS_CERT and ARENA_TLS_KEY to connect in plain "
            "text",
        ),
        (
            {"ARENA_TLS_CERT": "client.pem", "ARENA_TLS_KEY": "server.key"},
            "ARENA_TLS_KEY '{dir}/server.key' is not the private key of the client certificate "
            "in ARENA_TLS_CERT '{dir}/client.pem': give the key that was made with that "
            "certificate",
        ),
        (
            {"ARENA_TLS_CERT": "client.pem", "ARENA_TLS_KEY": "locked.key"},
            "ARENA_TLS_KEY '{dir}/locked.key' is encrypted with a pass phrase, which grpc-js "
            "cannot use: decrypt it (openssl pkey -in {dir}/locked.key -out bot.key) and give "
            "that",
        ),
        (
            {"ARENA_TLS_CERT": str(JS_PACKAGE), "ARENA_TLS_KEY": "client.key"},
            f"the TLS client certificate '{JS_PACKAGE}' (ARENA_TLS_CERT) is not a PEM file "
            "(-----BEGIN ...)",
        ),
        (
            {"ARENA_TLS_CERT": "client.pem", "ARENA_TLS_KEY": str(JS_PACKAGE)},
            f"the TLS client key '{JS_PACKAGE}' (ARENA_TLS_KEY) is not a PEM file (-----BEGIN ...)",
        ),
        (
            {"ARENA_TLS_CERT": "client.key", "ARENA_TLS_KEY": "client.pem"},
            "ARENA_TLS_CERT '{dir}/client.key' holds no usable certificate (no -----BEGIN "
            "CERTIFICATE----- block that parses): give the client certificate there, and its "
            "private key in ARENA_TLS_KEY",
        ),
        (
            {"ARENA_TLS_CERT": "client.pem", "ARENA_TLS_KEY": "client.pem"},
            "ARENA_TLS_KEY '{dir}/client.pem' holds no readable private key (-----BEGIN PRIVATE "
            "KEY-----): give the private key of the client certificate in ARENA_TLS_CERT "
            "'{dir}/client.pem'",
        ),
        (
            {"ARENA_TLS_CERT": "missing.pem", "ARENA_TLS_KEY": "client.key"},
            "cannot read the TLS client certificate '{dir}/missing.pem' (ARENA_TLS_CERT): no "
            "such file",
        ),
    ],
    ids=[
        "cert-without-key",
        "key-without-cert",
        "tls-0-beside-cert",
        "key-of-another-certificate",
        "encrypted-key",
        "cert-not-pem",
        "key-not-pem",
        "swapped",
        "certificate-as-key",
        "missing-cert",
    ],
)
def test_js_bot_refuses_a_bad_client_certificate_setting_in_one_line(
    client_certs: Path, files: dict[str, str], says: str
) -> None:
    # grpc-js given a pair it cannot use failed every connection for ten minutes, naming neither
    # file; half a pair went unsent. As the Python SDK does: one line at start and exit code 2.
    node = require_node()
    env = {
        name: value if name == "ARENA_TLS" else str(client_certs / value)
        for name, value in files.items()
    }
    done = run_js_bot(node, {"ARENA_ADDRESS": f"127.0.0.1:{closed_port()}", **env})
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"js: {says.replace('{dir}', str(client_certs))}\n", done.stderr


def test_js_bot_says_when_its_refused_token_has_a_line_break_around_it() -> None:
    # A CRLF .env file leaves "\r" on the token; the Python SDK said so, the JS bot gave only
    # the referee's "unknown token", sending its author to compare characters that look alike.
    node = require_node()
    accounts, tokens = TokenAccounts.issue_for(["js"])
    referee = RefereeThread(RefereeConfig(), accounts)
    port = referee.start("127.0.0.1:0")
    try:
        done = run_js_bot(
            node, {"ARENA_ADDRESS": f"127.0.0.1:{port}", "ARENA_TOKEN": tokens["js"] + "\r"}
        )
    finally:
        referee.stop(0, finished=True)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "(UNAUTHENTICATED)" in line, line
    assert line.endswith("begins or ends with a space or a line break: remove it"), line
    assert tokens["js"] not in done.stderr  # a secret stays out of the log
