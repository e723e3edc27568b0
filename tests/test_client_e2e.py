"""The client SDK end to end: real sample-bot processes against a real referee on loopback.

Each bot is ``python sample_bots/NAME.py`` (or a small bot script written by the test) with the
ARENA_* environment, exactly as an author runs it. The referee is the real one, on its own thread
(:class:`~arena.referee.RefereeThread`), or in a process of its own where the test kills it.
Every process a test starts is stopped by the ``procs`` fixture, whatever happens.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from arena.client import Bot, DecisionKind, DecisionView, view_of
from arena.client.remote import WELCOME_WAIT_S, ClientSettings, GaveUp, serve
from arena.client.wire import PROTOCOL_VERSION
from arena.engine import Hand
from arena.referee import PROTOCOL_VERSIONS, RefereeConfig, RefereeThread, TlsConfig
from arena.rules import Rules
from arena.table import Clocks, FaultKind, FaultPolicy, GameRecord, TableSpec, Termination

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
LOBBY_WAIT_MS = 30_000
"""How long a test waits for its bot processes to reach the lobby (they import grpc first)."""
GAME_TIMEOUT_S = 120.0
STOP_WAIT_S = 10.0
LOG_POLL_S = 0.05
"""How often a test rereads a bot's stderr while it waits for a line to appear there."""


class Procs:
    """Bot processes started by one test, their stderr kept in files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.running: list[subprocess.Popen[bytes]] = []
        self.logs: dict[str, Path] = {}

    def start(
        self,
        script: Path,
        address: str,
        token: str,
        name: str,
        extra_env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``python script`` as bot ``name``; stderr goes to a file named after it."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env.update(ARENA_ADDRESS=address, ARENA_TOKEN=token, ARENA_BOT_NAME=name)
        env.update(extra_env or {})
        log = self.folder / f"{name}.stderr"
        self.logs[name] = log
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, str(script)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=self.folder,
            )
        self.running.append(proc)
        return proc

    def stderr(self, name: str) -> str:
        """What bot ``name`` has written to stderr so far."""
        return self.logs[name].read_text()

    def wait_for_text(self, name: str, text: str) -> bool:
        """Whether ``text`` shows in bot ``name``'s stderr within LOBBY_WAIT_MS."""
        deadline = time.monotonic() + LOBBY_WAIT_MS / 1000
        while text not in self.stderr(name):
            if time.monotonic() > deadline:
                return False
            time.sleep(LOG_POLL_S)
        return True

    def stop_all(self) -> None:
        """Terminate every process still running, then kill the ones that linger."""
        for proc in self.running:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.running:
            try:
                proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def referee() -> Iterator[RefereeThread]:
    """A referee on its own thread, with one token per bot name used in these tests."""
    ref = RefereeThread(RefereeConfig(), {token: name for name, token in TOKENS.items()})
    ref.start()
    try:
        yield ref
    finally:
        ref.stop(0)


TOKENS = {
    name: f"token-{name}"
    for name in (
        "random_bot",
        "lowcard",
        "heuristic",
        "montecarlo",
        "random2",
        "lowcard2",
        "recorder",
        "faulty",
        "crashy",
    )
}


def _address(port: int) -> str:
    return f"127.0.0.1:{port}"


def _play(ref: RefereeThread, spec: TableSpec) -> GameRecord:
    assert ref.wait_for_bots(spec.seats, LOBBY_WAIT_MS), (
        f"bots never reached the lobby: {ref.idle()}"
    )
    return ref.submit(spec).result(GAME_TIMEOUT_S)


def _three_samples(procs: Procs, address: str) -> tuple[str, ...]:
    """Start the lowcard, heuristic and random sample bots, the usual company of a bot under
    test at seat 0; their names."""
    names = ("lowcard", "heuristic", "random_bot")
    for name in names:
        procs.start(SAMPLES / f"{name}.py", address, TOKENS[name], name)
    return names


def _assert_clean(record: GameRecord) -> None:
    assert record.termination is Termination.NORMAL, record.reason
    assert record.seat_status == (Termination.NORMAL,) * len(record.spec.seats), record.reason
    assert record.faults == (), record.faults


# ---- whole games with the sample bots --------------------------------------------------------


def test_the_four_sample_bots_play_a_whole_game(procs: Procs, referee: RefereeThread) -> None:
    names = ("random_bot", "lowcard", "heuristic", "montecarlo")
    for name in names:
        procs.start(SAMPLES / f"{name}.py", _address(referee.port), TOKENS[name], name)
    spec = TableSpec("whole", Rules(), seed=11, seats=names, board="11", hands=None)
    record = _play(referee, spec)
    _assert_clean(record)
    assert max(record.totals) >= Rules().target
    assert len(record.hands) >= 2
    asked = [d for d in record.decisions if not d.forced]
    assert {d.seat for d in asked} == {0, 1, 2, 3}
    for name in names:
        log = procs.stderr(name)
        assert "Traceback" not in log and "FAULT" not in log, log
        assert f"connected to {_address(referee.port)} as {name!r}" in log
    # As the arena director stops its bots: SIGTERM; each says Goodbye and exits with 0.
    for proc in procs.running:
        proc.terminate()
    assert [proc.wait(GAME_TIMEOUT_S) for proc in procs.running] == [0] * len(names)
    for name in names:
        log = procs.stderr(name)
        assert "(GOODBYE): goodbye (received SIGTERM)" in log, log
        assert log.splitlines()[-1].endswith("stopped by SIGTERM"), log


@pytest.mark.parametrize("players", [3, 5, 6])
def test_sample_bots_play_every_table_size(
    procs: Procs, referee: RefereeThread, players: int
) -> None:
    pool = ["random_bot", "lowcard", "heuristic", "montecarlo", "random2", "lowcard2"]
    script = {"random2": "random_bot", "lowcard2": "lowcard"}
    names = tuple(pool[:players])
    for name in names:
        path = SAMPLES / f"{script.get(name, name)}.py"
        procs.start(path, _address(referee.port), TOKENS[name], name)
    rules = Rules(players=players)
    spec = TableSpec(f"size{players}", rules, seed=players, seats=names, board="1", hands=2)
    record = _play(referee, spec)
    _assert_clean(record)
    assert len(record.hands) == 2


# ---- the view over the network is the view in local play -------------------------------------

RECORDER = """
import os, pickle
from arena.client import Bot, run

class Recorder(Bot):
    def __init__(self, path):
        self.path = path

    def _keep(self, view):
        with open(self.path, "ab") as f:
            pickle.dump(view, f)

    def choose_pass(self, view):
        self._keep(view)
        return super().choose_pass(view)

    def choose_play(self, view):
        self._keep(view)
        return super().choose_play(view)

run(Recorder(os.environ["RECORD_TO"]), decide_forced_moves=True)
"""


def _load_views(path: Path) -> list[DecisionView]:
    views = []
    with path.open("rb") as f:
        while True:
            try:
                views.append(pickle.load(f))
            except EOFError:
                return views


def _engine_view(record: GameRecord, view: DecisionView) -> DecisionView:
    """The view play_local would show at the position of ``view``, rebuilt from the record."""
    spec = record.spec
    k = view.hand_number
    hand = Hand.deal(spec.rules, spec.seed, hand_number=k, dealer=k % spec.rules.players)
    kept = record.hands[k]
    if view.kind is DecisionKind.PLAY:
        for seat, cards in enumerate(kept.passes):
            if cards:
                hand.pass_cards(seat, cards)
        played = [c for t in kept.tricks for c in t.cards]
        for card in played[: len(view.played)]:
            hand.play(card)
    totals = [sum(h.points[s] for h in record.hands[:k]) for s in range(spec.rules.players)]
    local = view_of(hand, view.seat, max_hands=spec.hands)
    return dataclasses.replace(
        local,
        hand_number=k,
        totals=tuple(totals),
        seat_names=spec.seats,
        game_id=view.game_id,
        move_ms=view.move_ms,
        bank_ms=view.bank_ms,
        deadline_ms=view.deadline_ms,
        received_at=view.received_at,
    )


@pytest.mark.parametrize(
    ("rules", "names"),
    [
        (Rules(), ("lowcard", "recorder", "heuristic", "random_bot")),
        # Three seats with a kitty (17 cards each, taken with the first trick) and a queen that
        # breaks hearts: the counts and the broken flag the referee keeps follow other rules.
        (
            Rules(players=3, kitty=True, queen_breaks_hearts=True),
            ("lowcard", "recorder", "heuristic"),
        ),
    ],
    ids=["standard", "three-kitty"],
)
def test_network_views_equal_the_engine_views_at_the_same_positions(
    procs: Procs, referee: RefereeThread, tmp_path: Path, rules: Rules, names: tuple[str, ...]
) -> None:
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER)
    views_file = tmp_path / "views.pickle"
    address = _address(referee.port)
    procs.start(script, address, TOKENS["recorder"], "recorder", {"RECORD_TO": str(views_file)})
    for name in names:
        if name != "recorder":
            procs.start(SAMPLES / f"{name}.py", address, TOKENS[name], name)
    spec = TableSpec("views", rules, seed=5, seats=names, board="5", hands=3)
    record = _play(referee, spec)
    _assert_clean(record)
    views = _load_views(views_file)
    passes = sum(1 for hand in record.hands if hand.passes[1])
    assert len(views) == passes + 3 * rules.hand_size  # its passes, every card (forced too)
    clocks = spec.clocks
    for view in views:
        assert view.seat == 1
        assert view == _engine_view(record, view)
        assert view.game_id.endswith(f"-{spec.table_id}")  # "g<count>-<table id>"
        assert view.max_hands == spec.hands == 3  # the game ends after 3 hands, target or not
        assert view.last_hand == (view.hand_number == 2)
        # As in local play: the move's own time, the bank apart; the hard limit is their sum.
        assert view.move_ms is not None and view.bank_ms is not None
        assert view.move_ms <= clocks.move_ms and view.bank_ms <= clocks.bank_ms
        assert view.deadline_ms == view.move_ms + view.bank_ms or view.move_ms == 0
    assert views[0].bank_ms == clocks.bank_ms


# ---- refusals, faults and crashes ------------------------------------------------------------


def test_a_wrong_token_exits_2_with_one_line(procs: Procs, referee: RefereeThread) -> None:
    proc = procs.start(SAMPLES / "lowcard.py", _address(referee.port), "not-a-token", "lowcard")
    assert proc.wait(GAME_TIMEOUT_S) == 2
    lines = procs.stderr("lowcard").splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("arena.client: ")
    assert "refused the token" in lines[0] and "UNAUTHENTICATED" in lines[0]


def test_a_hello_over_the_referees_message_limit_exits_2_at_once(
    procs: Procs, referee: RefereeThread
) -> None:
    # A token of 100 kB: the referee's RESOURCE_EXHAUSTED was retried as a transient failure
    # for ARENA_GIVE_UP_S (ten minutes by default), though the same Hello could never fit.
    token = "t" * 100_000
    proc = procs.start(SAMPLES / "lowcard.py", _address(referee.port), token, "big")
    assert proc.wait(GAME_TIMEOUT_S) == 2
    [line] = procs.stderr("big").splitlines()
    assert "RESOURCE_EXHAUSTED" in line and "over this referee's limit" in line, line
    assert "retrying" not in line and token not in line


def test_a_bot_is_told_which_name_its_token_has(procs: Procs, referee: RefereeThread) -> None:
    procs.start(SAMPLES / "lowcard.py", _address(referee.port), TOKENS["lowcard"], "zed")
    assert procs.wait_for_text(
        "zed", "the referee knows this token as bot 'lowcard', not 'zed' (ARENA_BOT_NAME)"
    )
    assert "connected to 127.0.0.1" in procs.stderr("zed") and "as 'lowcard'" in procs.stderr("zed")


def test_missing_settings_exit_2_with_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}

    def heuristic() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(SAMPLES / "heuristic.py")],
            env=env,
            capture_output=True,
            text=True,
            timeout=GAME_TIMEOUT_S,
            check=False,
        )

    done = heuristic()
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "ARENA_ADDRESS" in done.stderr and "ARENA_TOKEN" in done.stderr

    for nonsense, said in (
        ("nonsense", "expected the referee's HOST:PORT"),
        ("localhost:", "expected the referee's HOST:PORT"),
        (":50051", "expected the referee's HOST:PORT"),
        ("host:99999", "port 99999 is not a port number, 1 to 65535"),
    ):
        env.update(ARENA_ADDRESS=nonsense, ARENA_TOKEN="t", ARENA_BOT_NAME="n")
        done = heuristic()
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"ARENA_ADDRESS {nonsense!r}: {said}" in done.stderr

    # A URL is not retried for ten minutes (ARENA_GIVE_UP_S=0 makes that fail fast, with exit 1).
    env.update(ARENA_GIVE_UP_S="0")
    for url in ("http://127.0.0.1:5000", "https://arena.example:443/", "grpc://127.0.0.1:50051"):
        env.update(ARENA_ADDRESS=url)
        done = heuristic()
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"ARENA_ADDRESS {url!r}: give the referee's HOST:PORT without " in done.stderr
    env.update(ARENA_ADDRESS="::1:50051")  # retried for minutes as a "misformatted domain"
    done = heuristic()
    assert done.returncode == 2 and done.stderr == (
        "arena.client: ARENA_ADDRESS '::1:50051': an IPv6 address goes in brackets, [::1]:50051\n"
    ), done.stderr


def test_a_name_or_token_that_cannot_be_sent_exits_2_with_one_line() -> None:
    # A Latin-1 terminal's "é" (kept by Python as a lone surrogate) failed in building the
    # Hello with a traceback, exit 1; a name of 100 kB, past the referee's message limit, was
    # retried as a transient failure for ARENA_GIVE_UP_S (ten minutes by default).
    base = {k.encode(): v.encode() for k, v in os.environ.items() if not k.startswith("ARENA_")}
    base[b"ARENA_ADDRESS"] = b"127.0.0.1:9"  # never reached: refused before connecting
    cases = (
        (
            {b"ARENA_TOKEN": b"t", b"ARENA_BOT_NAME": b"caf\xe9"},
            "arena.client: ARENA_BOT_NAME 'caf\\udce9' is not UTF-8 text",
        ),
        (
            {b"ARENA_TOKEN": b"t\xff", b"ARENA_BOT_NAME": b"n"},
            "arena.client: ARENA_TOKEN is not UTF-8 text",
        ),
        (
            {b"ARENA_TOKEN": b"t", b"ARENA_BOT_NAME": b"n" * 100_000},
            "arena.client: ARENA_BOT_NAME is 100000 characters long: a bot's name is 1 to 64",
        ),
    )
    for setting, said in cases:
        done = subprocess.run(
            [sys.executable, str(SAMPLES / "lowcard.py")],
            env={**base, **setting},
            capture_output=True,
            timeout=GAME_TIMEOUT_S,
            check=False,
        )
        err = done.stderr.decode("utf-8", "replace")
        assert done.returncode == 2 and err.count("\n") == 1, err
        assert err.startswith(said), err
        assert "\xff" not in err and "t\\udcff" not in err  # a token is never shown


def test_the_sdks_name_limit_is_the_referees() -> None:
    from arena.client.remote import MAX_BOT_NAME as SDK_LIMIT
    from arena.referee.server import MAX_BOT_NAME

    assert SDK_LIMIT == MAX_BOT_NAME


FAULTY = """
import json, os
from arena.cards import CARDS
from arena.client import Bot, run

class Faulty(Bot):
    '''Plays a card it does not hold at its first play, and keeps what the referee says.'''

    def __init__(self):
        self.done = False

    def choose_play(self, view):
        if not self.done:
            self.done = True
            return next(c for c in CARDS if c not in view.hand)
        return super().choose_play(view)

    def on_fault(self, event):
        with open(os.environ["FAULTS_TO"], "a") as f:
            kind = event.kind.name if event.kind else "?"
            print(json.dumps([kind, event.answer, [str(c) for c in event.substitute]]), file=f)

run(Faulty())
"""

CRASHY = """
from arena.client import Bot, run

class Crashy(Bot):
    '''Raises at its first play.'''

    def __init__(self):
        self.calls = 0

    def choose_play(self, view):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("a bug in the author's code")
        return super().choose_play(view)

run(Crashy())
"""


def test_a_fault_reaches_stderr_and_on_fault(
    procs: Procs, referee: RefereeThread, tmp_path: Path
) -> None:
    script = tmp_path / "faulty.py"
    script.write_text(FAULTY)
    faults_file = tmp_path / "faults.txt"
    address = _address(referee.port)
    procs.start(script, address, TOKENS["faulty"], "faulty", {"FAULTS_TO": str(faults_file)})
    names = ("faulty", *_three_samples(procs, address))
    record = _play(referee, TableSpec("fault", Rules(), seed=3, seats=names, board="3", hands=1))
    assert record.termination is Termination.NORMAL
    assert [(f.seat, f.kind) for f in record.faults] == [(0, FaultKind.CARD_NOT_HELD)]
    fault = record.faults[0]
    told = [json.loads(line) for line in faults_file.read_text().splitlines()]
    assert told == [["CARD_NOT_HELD", fault.sent, list(fault.substitute)]]
    log = procs.stderr("faulty")
    assert "FAULT CARD_NOT_HELD" in log and "Traceback" not in log
    (line,) = [line for line in log.splitlines() if "FAULT" in line]
    assert line.count(fault.substitute[0]) == 1, line  # the substitute is named once


def test_an_exception_in_the_bot_is_logged_and_the_game_goes_on(
    procs: Procs, referee: RefereeThread, tmp_path: Path
) -> None:
    script = tmp_path / "crashy.py"
    script.write_text(CRASHY)
    address = _address(referee.port)
    procs.start(script, address, TOKENS["crashy"], "crashy")
    for name in ("lowcard", "heuristic", "random_bot"):
        procs.start(SAMPLES / f"{name}.py", address, TOKENS[name], name)
    names = ("lowcard", "crashy", "heuristic", "random_bot")
    record = _play(referee, TableSpec("crash", Rules(), seed=4, seats=names, board="4", hands=1))
    _assert_clean(record)
    log = procs.stderr("crashy")
    # Which game and request: two games (or two processes) sharing a log could not be told apart.
    said = re.findall(r"choose_play raised \(game (\S+), hand 0, trick \d+, request (\d+)\)", log)
    asked = {d.request_id for d in record.decisions if d.seat == 1}
    assert said and all(g.endswith(record.spec.table_id) and int(r) in asked for g, r in said), log
    assert "Traceback" in log and "RuntimeError: a bug in the author's code" in log


SLIPS = """
from arena.client import Bot, run

class Slips(Bot):
    '''Forgets to return: its pass, and its first play.'''

    def __init__(self):
        self.plays = 0

    def choose_pass(self, view):
        sorted(view.hand)[:3]

    def choose_play(self, view):
        self.plays += 1
        if self.plays > 1:
            return super().choose_play(view)

run(Slips())
"""


def test_an_answer_of_the_wrong_type_is_sent_and_judged_not_blamed_on_a_raise(
    procs: Procs, referee: RefereeThread, tmp_path: Path
) -> None:
    # As for an illegal card: the referee judges what came and faults it; the author is told
    # what the method returned, with no traceback pointing into the SDK.
    script = tmp_path / "slips.py"
    script.write_text(SLIPS)
    address = _address(referee.port)
    procs.start(script, address, TOKENS["faulty"], "faulty")
    names = ("faulty", *_three_samples(procs, address))
    record = _play(referee, TableSpec("slips", Rules(), seed=3, seats=names, board="3", hands=1))
    assert record.termination is Termination.NORMAL
    assert [(f.seat, f.kind) for f in record.faults] == [
        (0, FaultKind.MALFORMED),
        (0, FaultKind.MALFORMED),
    ]
    log = procs.stderr("faulty")
    assert "raised" not in log and "Traceback" not in log, log
    assert "choose_pass returned None, not a list of cards (hand 0)" in log
    assert "choose_play returned None, not a Card (hand 0, trick " in log
    assert "cannot parse card 'None'" in log and "'None' is not a card" in log


MISNAMED = """
from arena.client import Bot, run

class Mine(Bot):
    def play(self, view):
        return view.legal[-1]

run(Mine())
"""


def test_a_misnamed_method_is_told_in_the_bots_log_at_start(
    procs: Procs, referee: RefereeThread, tmp_path: Path
) -> None:
    script = tmp_path / "mine.py"
    script.write_text(MISNAMED)
    procs.start(script, _address(referee.port), TOKENS["faulty"], "faulty")
    assert procs.wait_for_text("faulty", "connected to"), procs.stderr("faulty")
    log = procs.stderr("faulty")
    assert "WARNING bot class Mine defines play(), which the SDK never calls: did you mean " in log
    assert "bot class Mine overrides neither choose_play nor choose_pass" in log


def test_a_kick_that_lets_the_bot_back_is_logged_as_a_kick(
    procs: Procs, referee: RefereeThread
) -> None:
    procs.start(SAMPLES / "lowcard.py", _address(referee.port), TOKENS["lowcard"], "lowcard")
    assert referee.wait_for_bots(["lowcard"], LOBBY_WAIT_MS)
    (session,) = referee.call(lambda r: r.sessions())
    assert referee.call(lambda r: r.kick(session.session_id, "testing kick"))
    assert procs.wait_for_text("lowcard", "reconnecting in"), procs.stderr("lowcard")
    log = procs.stderr("lowcard")
    assert (
        "INFO kicked by the referee, which lets the bot back (testing kick); reconnecting in"
        in (log)
    )
    assert "WARNING" not in log and "lost the connection" not in log, log


PONDERER = """
import sys, time
from arena.client import Bot, run

class Ponderer(Bot):
    '''Thinks 1.5 s over its first card (long enough to be kicked meanwhile), then plays fast.'''

    pondered = False

    def choose_play(self, view):
        if not self.pondered:
            self.pondered = True
            print("PONDERING", flush=True, file=sys.stderr)
            time.sleep(1.5)
        return super().choose_play(view)

run(Ponderer())
"""


def test_a_kick_in_a_game_answered_by_a_quick_return_costs_no_fault(
    procs: Procs, referee: RefereeThread, tmp_path: Path
) -> None:
    # The protocol guide: the clock of the request open at the kick runs while the bot is away,
    # it comes again with what is left, and only a decision falling due meanwhile is a fault.
    script = tmp_path / "ponderer.py"
    script.write_text(PONDERER)
    address = _address(referee.port)
    procs.start(script, address, TOKENS["faulty"], "faulty")
    names = ("faulty", *_three_samples(procs, address))
    clocks = Clocks(move_ms=10_000, bank_ms=10_000)
    spec = TableSpec("kick", Rules(), seed=5, seats=names, board="5", hands=1, clocks=clocks)
    assert referee.wait_for_bots(names, LOBBY_WAIT_MS), referee.idle()
    future = referee.submit(spec)
    assert procs.wait_for_text("faulty", "PONDERING"), procs.stderr("faulty")
    [session] = [s for s in referee.call(lambda r: r.sessions()) if s.bot == "faulty"]
    assert referee.call(lambda r: r.kick(session.session_id, "testing a kick in a game"))
    record = future.result(GAME_TIMEOUT_S)
    _assert_clean(record)
    log = procs.stderr("faulty")
    assert "kicked by the referee, which lets the bot back" in log, log
    assert "seat resumed" in log, log
    # The request open at the kick was asked again and answered: one decision took the time
    # away (the 1 s wait before reconnecting), not a substitute's.
    asked = [d for d in record.decisions if d.seat == 0 and d.kind == "play" and not d.forced]
    assert max(d.elapsed_ms for d in asked) > 1000
    assert not any(d.fallback for d in record.decisions)


ALWAYS_RAISES = """
from arena.client import Bot, run

class Raises(Bot):
    def choose_play(self, view):
        raise ValueError("a bug")

run(Raises())
"""


def test_arena_run_ends_by_pointing_at_a_log_full_of_the_sdks_answers(tmp_path: Path) -> None:
    # The SDK answers legally for a bot whose code raises: no fault, so the faults table shows
    # nothing; the run's end must say where the tracebacks are.
    script = tmp_path / "raises.py"
    script.write_text(ALWAYS_RAISES)
    lowcard = f"python {SAMPLES / 'lowcard.py'}"
    bots = [f"bad=python {script}", *(f"{name}={lowcard}" for name in ("a", "b", "c"))]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "arena"), "run", "--boards", "1", "--concurrency", "1"]
        + [arg for spec in bots for arg in ("--bot", spec)]
        + ["--db", str(tmp_path / "run.db"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=GAME_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    log = tmp_path / "out" / "logs" / "bad.log"
    answered = log.read_text().count("ERROR choose_play raised")
    assert answered > 0
    said = [line for line in done.stdout.splitlines() if line.startswith("bot ")]
    assert said == [
        f"bot 'bad': its log has {answered} errors (the SDK answered {answered} decisions for "
        f"its code): see {log}"
    ]


QUITTER = """
import os, signal
from arena.client import Bot, run

class Quitter(Bot):
    '''Is sent SIGTERM while it thinks about its first card, as a stopping director would.'''

    def choose_play(self, view):
        os.kill(os.getpid(), signal.SIGTERM)
        return super().choose_play(view)

run(Quitter())
"""
LONG_GRACE_MS = 600_000
"""A reconnection grace longer than any test: only a Goodbye frees a seat before it ends."""


def test_sigterm_in_a_game_says_goodbye_and_the_seat_is_freed_at_once(
    procs: Procs, referee: RefereeThread, tmp_path: Path
) -> None:
    script = tmp_path / "quitter.py"
    script.write_text(QUITTER)
    address = _address(referee.port)
    quitter = procs.start(script, address, TOKENS["faulty"], "faulty")
    names = ("faulty", *_three_samples(procs, address))
    policy = FaultPolicy(grace_ms=LONG_GRACE_MS)
    spec = TableSpec("quit", Rules(), seed=3, seats=names, board="3", hands=1, faults=policy)
    # Without the Goodbye the referee would hold the seat for the whole grace period.
    record = _play(referee, spec)
    assert quitter.wait(GAME_TIMEOUT_S) == 0
    assert record.termination is Termination.NORMAL, record.reason
    assert record.seat_status[0] is Termination.DISCONNECT
    assert record.seat_status[1:] == (Termination.NORMAL,) * 3
    assert [(f.seat, f.kind) for f in record.faults] == [(0, FaultKind.DISCONNECT)]
    log = procs.stderr("faulty")
    assert "(GOODBYE): goodbye (received SIGTERM)" in log and "Traceback" not in log, log


# ---- reconnection ----------------------------------------------------------------------------

REFEREE = """
import asyncio, json, sys
from arena.referee import Referee, RefereeConfig
from arena.table import TableSpec

async def main(address, tokens):
    referee = Referee(RefereeConfig(), tokens)
    port = await referee.start(address)
    print("PORT", port, flush=True)
    loop = asyncio.get_running_loop()
    for line in iter(sys.stdin.readline, ""):
        command, _, arg = line.strip().partition(" ")
        if command == "wait":
            ok = await referee.wait_for_bots(arg.split(","), 30000)
            print("LOBBY", ok, flush=True)
        elif command == "play":
            record = await referee.play_table(TableSpec.from_dict(json.loads(arg)))
            print("RECORD", json.dumps(record.to_dict()), flush=True)

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""


class RefereeProcess:
    """A referee in a process of its own, driven by lines on its stdin."""

    def __init__(self, script: Path, address: str) -> None:
        tokens = json.dumps({token: name for name, token in TOKENS.items()})
        self.proc = subprocess.Popen(
            [sys.executable, str(script), address, tokens],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.port = int(self._answer("PORT"))

    def _answer(self, tag: str) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith(tag + " "), line
        return line[len(tag) + 1 :].strip()

    def _ask(self, line: str, tag: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._answer(tag)

    def wait_for(self, names: tuple[str, ...]) -> bool:
        """Whether these bots reached the lobby."""
        return self._ask("wait " + ",".join(names), "LOBBY") == "True"

    def play(self, spec: TableSpec) -> GameRecord:
        """Play a table and return its record."""
        return GameRecord.from_dict(
            json.loads(self._ask("play " + json.dumps(spec.to_dict()), "RECORD"))
        )

    def kill(self) -> None:
        """SIGKILL: no shutdown notice, the streams just break."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        """Stop it if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def test_a_bot_reconnects_after_the_referee_is_killed_and_restarted(
    procs: Procs, tmp_path: Path
) -> None:
    script = tmp_path / "referee.py"
    script.write_text(REFEREE)
    first = RefereeProcess(script, "127.0.0.1:0")
    port = first.port
    second: RefereeProcess | None = None
    try:
        names = ("lowcard", "heuristic", "random_bot", "montecarlo")
        for name in names:
            procs.start(SAMPLES / f"{name}.py", _address(port), TOKENS[name], name)
        assert first.wait_for(names)
        # The lobby has a bot once its Hello is accepted, a moment before the bot reads its
        # Welcome (and logs "connected"); killing the referee in between makes the bot's first
        # attempt a failed connection, not a lost one, and the test would be about that race.
        for name in names:
            assert procs.wait_for_text(name, f"connected to {_address(port)} as {name!r}")
        first.kill()
        second = RefereeProcess(script, _address(port))
        assert second.wait_for(names)
        spec = TableSpec("again", Rules(), seed=8, seats=names, board="8", hands=1)
        _assert_clean(second.play(spec))
        for name in names:
            log = procs.stderr(name)
            assert log.count(f"connected to {_address(port)} as {name!r}") == 2, log
            assert "lost the connection to" in log and "Traceback" not in log
    finally:
        first.close()
        if second is not None:
            second.close()


def _free_port() -> int:
    """A port that was free a moment ago: nothing listens, so every attempt is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_serve_gives_up_on_a_referee_that_never_answers(caplog: pytest.LogCaptureFixture) -> None:
    settings = ClientSettings(_address(_free_port()), "token", "nobody")
    with (
        caplog.at_level(logging.WARNING, "arena.client"),
        pytest.raises(GaveUp, match="unreachable"),
    ):
        serve(Bot(), settings, give_up_after=2.0)
    waits = [
        float(m[1])
        for r in caplog.records
        if (m := re.search(r"retrying in ([\d.]+) s", r.getMessage()))
    ]
    # Doubling backoff (0.1, 0.2, ... s) would sleep past 2 s; the waits stop at the give-up time.
    assert len(waits) >= 3 and sum(waits) <= 2.0 + 0.05 * len(waits)  # (waits print rounded)


def test_serve_gives_up_on_time_at_an_address_that_takes_connections_but_never_answers() -> None:
    # A stopped referee process (or a frozen machine) takes TCP connections and says nothing:
    # each attempt waited for gRPC's own 20 s, the give-up clock started only after the first
    # had failed, and a 1 s give-up time gave up after 41 s ("unreachable for 20 s").
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes the connections; nothing ever answers
        settings = ClientSettings(_address(silent.getsockname()[1]), "token", "nobody")
        started = time.monotonic()
        with pytest.raises(GaveUp) as gave_up:
            serve(Bot(), settings, give_up_after=1.0)
        took = time.monotonic() - started
    said = str(gave_up.value)
    assert "has been unreachable for 5 s (DEADLINE_EXCEEDED: no Welcome within 5 s" in said, said
    assert took < WELCOME_WAIT_S, took  # one shortened attempt, not gRPC's 20 s ones


def test_a_bot_process_gives_up_after_arena_give_up_s(procs: Procs) -> None:
    # Left at its default of 600 s, the bot would outlive the test's wait.
    give_up = {"ARENA_GIVE_UP_S": "0.3"}
    proc = procs.start(SAMPLES / "lowcard.py", _address(_free_port()), "t", "lowcard", give_up)
    assert proc.wait(GAME_TIMEOUT_S) == 1
    last = procs.stderr("lowcard").splitlines()[-1]
    assert last.startswith("arena.client: the referee at 127.0.0.1:") and "unreachable" in last


def test_sigterm_ends_a_bot_that_waits_to_reconnect(procs: Procs) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    # The default give-up time (600 s) would keep it retrying long past the test's wait.
    env.update(ARENA_ADDRESS=_address(_free_port()), ARENA_TOKEN="t", ARENA_BOT_NAME="lowcard")
    proc = subprocess.Popen(
        [sys.executable, str(SAMPLES / "lowcard.py")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    procs.running.append(proc)
    assert proc.stderr is not None
    # Its first warning says it is in the backoff loop (a pipe: read as written, no polling).
    seen = b""
    for line in iter(proc.stderr.readline, b""):
        seen += line
        if b"cannot connect to" in line:
            break
    proc.terminate()
    rest = proc.communicate(timeout=GAME_TIMEOUT_S)[1].decode()
    assert proc.returncode == 0, seen.decode() + rest
    assert rest.splitlines()[-1].endswith("stopped by SIGTERM"), rest


# ---- TLS -------------------------------------------------------------------------------------


def _make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it, with the openssl tool."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    )
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    )
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl tool")
def test_bots_play_over_tls_with_a_ca_from_the_environment(procs: Procs, tmp_path: Path) -> None:
    ca, cert, key = _make_certificates(tmp_path)
    config = RefereeConfig(tls=TlsConfig.from_files(cert, key))
    ref = RefereeThread(config, {token: name for name, token in TOKENS.items()})
    port = ref.start()
    try:
        names = ("lowcard", "heuristic", "random_bot", "random2")
        for name in names:
            script = SAMPLES / ("random_bot.py" if name == "random2" else f"{name}.py")
            procs.start(script, _address(port), TOKENS[name], name, {"ARENA_TLS_CA": str(ca)})
        record = _play(ref, TableSpec("tls", Rules(), seed=2, seats=names, board="2", hands=1))
        _assert_clean(record)
    finally:
        ref.stop(0)


def test_the_sdk_speaks_a_version_the_referee_speaks() -> None:
    assert PROTOCOL_VERSION == 1
    assert PROTOCOL_VERSION in PROTOCOL_VERSIONS


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """One CA and server certificate for the module's tests (making them takes a while)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl tool")
    return _make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.mark.parametrize(
    ("referee_tls", "bot_env", "told", "code"),
    [
        (True, {}, "if the referee uses TLS, set ARENA_TLS=1", 1),
        (False, {"ARENA_TLS": "1"}, "does not speak TLS on this port; unset ARENA_TLS (or", 2),
        # Told to unset the variables it set: it was told "ARENA_TLS and ARENA_TLS_CA".
        (
            False,
            {"ARENA_TLS_CERT": "{cert}", "ARENA_TLS_KEY": "{key}"},
            "does not speak TLS on this port; unset ARENA_TLS_CERT and ARENA_TLS_KEY (or",
            2,
        ),
        (
            False,
            {"ARENA_TLS_CA": "{ca}"},
            "does not speak TLS on this port; unset ARENA_TLS_CA (or",
            2,
        ),
        (True, {"ARENA_TLS": "1"}, "the referee's certificate is not trusted; set ARENA_TLS_CA", 2),
    ],
    ids=[
        "plain-bot-tls-referee",
        "tls-bot-plain-referee",
        "client-certificate-plain-referee",
        "ca-plain-referee",
        "untrusted-certificate",
    ],
)
def test_a_tls_mismatch_says_which_setting_to_change(
    procs: Procs,
    certificates: tuple[Path, Path, Path],
    referee_tls: bool,
    bot_env: dict[str, str],
    told: str,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # gRPC's own words ("Socket closed", "WRONG_VERSION_NUMBER") name no setting to change.
    # A TLS bot's failed handshake is certain to fail again: exit 2 at the first try, not
    # retried for ten minutes (a plain bot's "Socket closed" may be a restarting referee).
    # The bot gets gRPC's default log level, as a bot author's shell gives it.
    monkeypatch.delenv("GRPC_VERBOSITY", raising=False)
    ca, cert, key = certificates
    config = RefereeConfig(tls=TlsConfig.from_files(cert, key) if referee_tls else None)
    ref = RefereeThread(config, {token: name for name, token in TOKENS.items()})
    port = ref.start()
    try:
        files = {"ca": ca, "cert": cert, "key": key}
        env = {**{k: v.format(**files) for k, v in bot_env.items()}, "ARENA_GIVE_UP_S": "1"}
        proc = procs.start(
            SAMPLES / "lowcard.py", _address(port), TOKENS["lowcard"], "lowcard", env
        )
        assert proc.wait(GAME_TIMEOUT_S) == code
        last = procs.stderr("lowcard").strip().splitlines()[-1]
        assert told in last, last
        if code == 1:
            assert "has been unreachable for" in last, last
        else:
            assert last.startswith(f"arena.client: cannot connect to {_address(port)} ("), last
            # One line: gRPC's core logged the failed handshake at INFO on stderr before it.
            assert procs.stderr("lowcard").strip().splitlines() == [last]
    finally:
        ref.stop(0)


def test_a_certificate_for_another_host_exits_2_saying_so(
    procs: Procs, certificates: tuple[Path, Path, Path]
) -> None:
    # The certificate names 127.0.0.1 only; the bot trusts its CA but connects as "localhost".
    # gRPC's "Hostname Verification Check failed" fails every retry the same way: it was retried
    # for ten minutes with no word of which setting to change.
    ca, cert, key = certificates
    accounts = {token: name for name, token in TOKENS.items()}
    ref = RefereeThread(RefereeConfig(tls=TlsConfig.from_files(cert, key)), accounts)
    port = ref.start("127.0.0.1:0")
    try:
        env = {"ARENA_TLS_CA": str(ca), "ARENA_GIVE_UP_S": "5"}
        address = f"localhost:{port}"
        proc = procs.start(SAMPLES / "lowcard.py", address, TOKENS["lowcard"], "lowcard", env)
        assert proc.wait(GAME_TIMEOUT_S) == 2
        lines = procs.stderr("lowcard").strip().splitlines()
        assert lines == [
            f"arena.client: cannot connect to {address} (UNAVAILABLE): the referee's certificate "
            "is not for the host localhost; set ARENA_ADDRESS to a host name the certificate "
            "holds (the organiser gives it)"
        ], lines
    finally:
        ref.stop(0)


def test_an_address_that_is_no_referee_exits_2_at_once(procs: Procs) -> None:
    # A gRPC server without BotService answers UNIMPLEMENTED: retrying for ten minutes cannot
    # help, as the protocol guide says.
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        proc = procs.start(SAMPLES / "lowcard.py", _address(port), TOKENS["lowcard"], "lowcard")
        assert proc.wait(GAME_TIMEOUT_S) == 2
        last = procs.stderr("lowcard").strip().splitlines()[-1]
        assert "is not a Hearts Arena referee" in last and "UNIMPLEMENTED" in last, last
    finally:
        server.stop(0)
