"""What a newcomer met with TLS and a gauntlet's config file, each bad input now one line
saying what to change: `arena serve`'s certificate and key (checked before anything is made),
its JSON log beside bots failing the handshake, `arena admin` at a certificate of another host
or out of date, and a config file's gauntlet candidate.

Real `arena serve` and `arena` processes on loopback ports 0, real SDK bot processes,
certificates made with the openssl tool.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import make_certs
from conftest import run_at_once
from test_server_support import ServerProcess

REPO = Path(__file__).resolve().parent.parent
LOWCARD = REPO / "sample_bots" / "lowcard.py"
WAIT_S = 60.0
"""How long a command that should exit at once may take (a slow machine); never a measured time."""
PORTS = ("--port", "0", "--web-port", "0")


def _certificate(
    folder: Path,
    name: str,
    dates: tuple[str, str] | None = None,
    hosts: str = make_certs.HOSTS,
) -> Path:
    """A self-signed certificate ``NAME.pem`` for ``hosts`` with its key ``NAME.key``; with
    ``dates`` (openssl's YYYYMMDDHHMMSSZ), valid only between them."""
    if dates is None:
        return make_certs.self_signed(folder, name, hosts)
    return make_certs.dated(folder, name, *dates, hosts=hosts)


def _serve(db: Path, *flags: str) -> Callable[[], subprocess.Popen[str]]:
    """A starter of `arena serve` on free ports with ``flags``, its input closed."""
    return lambda: subprocess.Popen(
        [sys.executable, "-m", "arena.server.cli", "serve", "--db", str(db), *PORTS, *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=db.parent,
    )


def _arena(cwd: Path, *args: str) -> Callable[[], subprocess.Popen[str]]:
    """A starter of the `arena` command with ``args`` in ``cwd``."""
    return lambda: subprocess.Popen(
        [sys.executable, "-m", "arena.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_refuses_each_bad_certificate_or_key_in_one_line_naming_the_file(
    tmp_path: Path,
) -> None:
    # An expired certificate started the server, and every bot was then told "not trusted; set
    # ARENA_TLS_CA to the CA that signed it"; a key under a pass phrase stopped the start at an
    # OpenSSL prompt (on a terminal: a hang), and ended "[Errno 22] Invalid argument"; a key of
    # another certificate or a file that is not PEM said "cert and key are not a PEM
    # certificate chain and its private key ([SSL] PEM lib (_ssl.c:3905))", not which file.
    _certificate(tmp_path, "good")
    _certificate(tmp_path, "other")
    _certificate(tmp_path, "old", ("20200101000000Z", "20200102000000Z"))
    _certificate(tmp_path, "future", ("20990101000000Z", "20990102000000Z"))
    make_certs.openssl(
        tmp_path,
        *("pkey", "-in", "good.key", "-aes256", "-passout", "pass:secret", "-out", "locked.key"),
    )
    (tmp_path / "notes.txt").write_text("not a certificate\n")
    cases = {
        "old.pem old.key": "the certificate in old.pem has expired",
        "future.pem future.key": "the certificate in future.pem is not valid yet",
        "good.pem locked.key": "the private key locked.key is encrypted with a pass phrase",
        "good.pem other.key": "other.key is not the private key of the certificate in good.pem",
        "notes.txt good.key": "notes.txt holds no readable PEM certificate",
        "good.key good.pem": "good.key holds no readable PEM certificate",
        "good.pem notes.txt": "notes.txt holds no readable PEM private key",
    }
    dbs = [tmp_path / f"case{k}.db" for k in range(len(cases))]
    done = run_at_once(
        [
            _serve(db, "--tls-cert", pair.split()[0], "--tls-key", pair.split()[1])
            for db, pair in zip(dbs, cases, strict=True)
        ],
        WAIT_S,
    )
    for (pair, told), db, result in zip(cases.items(), dbs, done, strict=True):
        assert result.returncode == 2, (pair, result.stdout, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, (pair, result.stderr)
        assert result.stderr.startswith("arena: error: TLS: "), (pair, result.stderr)
        assert told in result.stderr, (pair, result.stderr)
        assert not db.exists(), pair  # refused before the database was made


def test_bots_failing_the_tls_handshake_leave_the_servers_log_json(tmp_path: Path) -> None:
    # gRPC's C core wrote a raw "I... ssl_transport_security.cc] Handshake failed ..." line on
    # the server's stderr, its JSON-lines log, for each attempt of a plain-text bot (one a
    # second, for ten minutes) and of a bot not trusting the certificate.
    cert = _certificate(tmp_path, "server")
    _certificate(tmp_path, "stranger")
    db = tmp_path / "comp.db"
    token = ServerProcess.cli_here("bots", "add", "alice", "--db", str(db)).strip()
    server = _serve(db, "--tls-cert", cert.name, "--tls-key", "server.key")()
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert "bots connect to 127.0.0.1:" in banner, banner
        port = banner.split("bots connect to 127.0.0.1:")[1].split(";")[0]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "GRPC_"))}
        env |= {"ARENA_ADDRESS": f"127.0.0.1:{port}", "ARENA_TOKEN": token}
        env |= {"ARENA_BOT_NAME": "alice", "ARENA_GIVE_UP_S": "1"}

        def bot(extra: dict[str, str]) -> Callable[[], subprocess.Popen[str]]:
            return lambda: subprocess.Popen(
                [sys.executable, str(LOWCARD)],
                env=env | extra,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

        # A plain-text bot retries until its give-up time; one not trusting the certificate
        # exits at its first handshake.
        bots = run_at_once([bot({}), bot({"ARENA_TLS_CA": str(tmp_path / "stranger.pem")})], WAIT_S)
        assert [b.returncode for b in bots] == [1, 2], [b.stderr for b in bots]
        server.send_signal(signal.SIGTERM)
        _, errors = server.communicate(timeout=WAIT_S)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    lines = errors.strip().splitlines()
    assert lines, "the server logged nothing"
    for line in lines:
        assert isinstance(json.loads(line), dict), line


def test_a_gauntlet_files_candidate_of_another_type_or_missing_is_said_in_the_files_words(
    tmp_path: Path,
) -> None:
    # `candidate = true` said "candidate = True is not a bot" (Python's spelling, and not that a
    # name goes in quotes); a gauntlet whose bots are all the file's [bots] was told to give
    # "one of the --bot names".
    bots = "[bots]\n" + "".join(f'{n} = "python {LOWCARD}"\n' for n in ("a", "b", "c", "d"))
    files = {
        'format = "gauntlet"\ncandidate = true\n': "candidate = true: expected a bot's name in "
        'quotes, e.g. "a"',
        "candidate = 3\n": 'candidate = 3: expected a bot\'s name in quotes, e.g. "a"',
        'format = "gauntlet"\n': 'needs --candidate NAME (in a config file, candidate = "NAME"), '
        "one of the bots: a, b, c, d",
    }
    for k, text in enumerate(files):
        (tmp_path / f"c{k}.toml").write_text(text + bots)
    done = run_at_once(
        [_arena(tmp_path, "run", "--config", f"c{k}.toml") for k in range(len(files))], WAIT_S
    )
    for told, result in zip(files.values(), done, strict=True):
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("arena: error: config file: "), result.stderr
        assert told in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "arena.db").exists()


def test_admin_says_what_to_change_for_a_certificate_of_another_host_or_out_of_date(
    tmp_path: Path,
) -> None:
    # Each refused certificate said "this machine does not trust (...); give its certificate with
    # --ca FILE", also to an organiser who had given the very certificate, when it was made out
    # for another host name than --url's, or had expired while the server served.
    elsewhere = _certificate(tmp_path, "elsewhere", hosts="DNS:arena.example")
    old = _certificate(tmp_path, "old", ("20200101000000Z", "20200102000000Z"))
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("admin", "token", "--db", str(db))
    server = _serve(db, "--tls-cert", elsewhere.name, "--tls-key", "elsewhere.key")()
    # A server whose certificate expired while it ran (arena serve refuses one at start).
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(old, old.with_suffix(".key"))
    expired = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    expired.socket = context.wrap_socket(expired.socket, server_side=True)
    threading.Thread(target=expired.serve_forever, daemon=True).start()
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert "leaderboard at https://127.0.0.1:" in banner, banner
        web = banner.split("leaderboard at https://127.0.0.1:")[1].split("/")[0]
        urls = {
            f"https://127.0.0.1:{web}": (elsewhere, "has a certificate made out for another "
            "host than 127.0.0.1 (IP address mismatch"),
            f"https://localhost:{web}": (elsewhere, "has a certificate made out for another "
            "host than localhost (Hostname mismatch"),
            f"https://127.0.0.1:{expired.server_port}": (old, "has a certificate out of date "
            "(certificate has expired); the server needs a new one"),
        }  # fmt: skip
        done = run_at_once(
            [
                _arena(tmp_path, "admin", "pause", "--url", url, "--token", "t", "--ca", ca.name)
                for url, (ca, _) in urls.items()
            ],
            WAIT_S,
        )
        for (url, (_, told)), result in zip(urls.items(), done, strict=True):
            assert result.returncode == 2, result.stderr
            assert result.stderr.startswith(f"arena: error: the server at {url} "), result.stderr
            assert told in result.stderr and result.stderr.count("\n") == 1, result.stderr
            assert "--ca FILE" not in result.stderr, result.stderr
    finally:
        expired.shutdown()
        expired.server_close()
        if server.poll() is None:
            server.kill()
        server.communicate()
