"""Run configuration: TOML and flags merged, every bad input one line that names it."""

from __future__ import annotations

import re
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from arena.config import (
    MAX_SEED,
    SAMPLE_BOTS,
    Format,
    build_config,
    load_toml,
    parse_bot,
    parse_duration_ms,
    rule_names,
)
from arena.director.schedule import (
    board_rules,
    board_seed,
    groups,
    rotation,
    schedule,
    sprt_tables,
)
from arena.errors import ConfigError
from arena.rules import MoonRule, Rules
from arena.table import Clocks, FaultPolicy

FIVE = ["a=true", "b=true", "c=true", "d=true", "e=true"]


def test_durations_are_milliseconds_unless_a_unit_says_otherwise() -> None:
    assert parse_duration_ms("1000", "--move-time") == 1000
    assert parse_duration_ms(250, "--move-time") == 250
    assert parse_duration_ms("500ms", "--move-time") == 500
    assert parse_duration_ms("1.5s", "--move-time") == 1500
    assert parse_duration_ms("2m", "--time-bank") == 120_000
    for bad in ("fast", "-1", "1h", ""):
        with pytest.raises(ConfigError, match="--move-time"):
            parse_duration_ms(bad, "--move-time")
    # A fraction of a millisecond was rounded without a word: 1.5 made a 2 ms clock.
    for fraction in ("1.5", 1.5):
        with pytest.raises(ConfigError, match=r"whole number of milliseconds; did you mean 1.5s"):
            parse_duration_ms(fraction, "--move-time")
    with pytest.raises(ConfigError, match=r"whole number of milliseconds$"):
        parse_duration_ms("0.5ms", "--move-time")
    assert parse_duration_ms(2.0, "--move-time") == 2


def test_bot_flags_split_like_a_shell() -> None:
    bot = parse_bot("mine=python 'my bot.py' --fast")
    assert bot.name == "mine"
    assert bot.argv == ("python", "my bot.py", "--fast")
    assert bot.label == "python 'my bot.py' --fast"
    for bad, message in (
        ("noequals", "expected NAME=COMMAND"),
        ("=python x", "expected NAME=COMMAND"),
        ("bad name=true", "bot name 'bad name'"),
        ("x=", "the command is empty"),
        ("x='unclosed", "cannot split"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_bot(bad)


def test_a_words_leading_tilde_is_the_home_folder_as_a_shell_has_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The README's `python ~/hearts-arena/...` ran python on a folder named "~" in the current one.
    monkeypatch.setenv("HOME", "/home/ann")
    bot = parse_bot("mine=python ~/bots/mine.py --data=~/x ~ a~b '~/quoted too.py'")
    assert bot.argv == (
        "python",
        "/home/ann/bots/mine.py",
        "--data=~/x",
        "/home/ann",
        "a~b",
        "/home/ann/quoted too.py",
    )


def test_no_bot_means_the_sample_bots() -> None:
    config = build_config()
    assert config.bot_names == SAMPLE_BOTS
    assert all(b.argv[0] == sys.executable for b in config.bots)
    assert config.bots[0].label == "sample_bots/random_bot.py"
    assert all(Path(b.argv[1]).is_file() for b in config.bots)
    assert config.players == 4 and config.boards == 10 and config.concurrency >= 1
    assert config.db == Path("arena.db") and config.out == Path("arena-out")


def test_flags_override_the_file(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text(
        """
players = 3
rules = "omnibus"
boards = 4
seed = 9
move-time = "2s"
time_bank = 30000
db = "x.db"
[rule]
moon = "best"
sun = true
[bots]
a = "true"
b = ["true", "--flag"]
c = "true"
"""
    )
    file = load_toml(toml)
    config = build_config(file, bots=["c=false", "d=true"], boards=6, rule=["moon=subtract"])
    assert config.bot_names == ("a", "b", "c", "d")
    assert config.bot("b").argv == ("true", "--flag")
    assert config.bot("c").argv == ("false",)
    assert config.players == 3
    assert config.rules.jack_of_diamonds == -10
    assert config.rules.moon is MoonRule.SUBTRACT and config.rules.sun
    assert (config.boards, config.seed) == (6, 9)
    assert config.clocks == Clocks(move_ms=2000, bank_ms=30_000)
    assert config.db == Path("x.db") and config.out == Path("x-out")


def test_a_file_rule_at_its_default_stays_set_beside_a_flag_rule() -> None:
    # The file's moon_points = 26 equalled the standard default, was kept as "the default",
    # and --rule spot_hearts=true then made the moon 117. The file's removed_cards, the
    # 3-player default, vanished the same way, and a kitty beside them passed unremarked.
    file = {"rule": {"moon_points": 26}}
    config = build_config(file, bots=FIVE, rule=["spot_hearts=true"])
    assert config.rules.spot_hearts and config.rules.moon_value == 26
    assert build_config(bots=FIVE, rule=["spot_hearts=true"]).rules.moon_value == 117
    with pytest.raises(ConfigError, match=r"^config file: \[rule\] with --rule: rules\."):
        build_config(
            {"players": 3, "rule": {"removed_cards": ["2D"]}}, bots=FIVE, rule=["kitty=true"]
        )


def test_a_command_in_other_quotes_or_a_list_is_the_same_run() -> None:
    # The identity hashed the text as typed: moving a bot from --bot to the config file's list,
    # or another quoting, made "another run" that could not be resumed.
    forms = [
        build_config(bots=[*FIVE[:4], 'sp=python "sp ace/my bot.py"']),
        build_config(bots=[*FIVE[:4], "sp=python  'sp ace/my bot.py'"]),
        build_config(
            {"bots": {**dict(b.split("=") for b in FIVE[:4]), "sp": ["python", "sp ace/my bot.py"]}}
        ),
    ]
    assert len({c.run_id for c in forms}) == 1
    assert forms[0].bot("sp").label == "python 'sp ace/my bot.py'"
    assert build_config(bots=[*FIVE[:4], "sp=python other.py"]).run_id != forms[0].run_id


def test_identity_ignores_what_does_not_change_the_games() -> None:
    base = build_config(bots=FIVE, boards=3)
    assert base.run_id == build_config(bots=FIVE, boards=3, concurrency=9, db="o.db").run_id
    assert base.run_id == build_config(bots=FIVE, boards=3, out="elsewhere", port=5000).run_id
    for other in (
        build_config(bots=FIVE, boards=4),
        build_config(bots=FIVE, boards=3, seed=2),
        build_config(bots=[*FIVE[:4], "e=false"], boards=3),
        build_config(bots=FIVE, boards=3, rule=["moon=best"]),
        build_config(bots=FIVE, boards=3, move_time="999"),
        build_config(bots=FIVE, boards=3, game_to=50),
    ):
        assert other.run_id != base.run_id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bots": FIVE[:3]}, r"3 bot\(s\) \(a, b, c\) for 4-player tables: give at least 4"),
        ({"bots": FIVE, "players": 7}, "--players 7: a table has 3 to 6 players"),
        ({"bots": FIVE, "rules": "nope"}, "--rules 'nope': not a preset; choose one of standard"),
        ({"bots": FIVE, "rule": ["colour=red"]}, "--rule 'colour=red': 'colour' is not a rule"),
        ({"bots": FIVE, "rule": [""]}, "--rule '': expected NAME=VALUE, e.g. --rule moon=best"),
        ({"bots": FIVE, "rule": ["="]}, "--rule '=': expected NAME=VALUE"),
        ({"bots": FIVE, "rule": ["moon"]}, "--rule 'moon': expected NAME=VALUE"),
        ({"bots": FIVE, "format": ""}, "--format '': choose one of round-robin, gauntlet"),
        ({"bots": FIVE, "out": ""}, "--out '': give a folder, or leave --out out for the default"),
        ({"bots": FIVE, "db": ""}, "--db '': give a database file"),
        ({"bots": FIVE, "db": "x.db", "out": "x.db"}, r"--out x.db: is the --db path; give"),
        ({"bots": FIVE, "db": "x.db", "out": "x.db/o"}, r"--out x.db/o: lies inside the --db path"),
        # The run makes the output folder but not the database's: refused here, as the run did.
        ({"bots": FIVE, "db": "o/x.db", "out": "o"}, r"--db o/x.db: folder o does not exist"),
        ({"bots": [*FIVE[:3], "-x=true"]}, r"bot name '-x' starts with '-': use up"),
        ({"bots": FIVE, "rule": ["moon=sideways"]}, "--rule: rules.moon: unknown value"),
        ({"bots": FIVE, "rule": ["players=3"]}, "set the table size with --players"),
        (
            {"bots": FIVE, "rule": ["moon=add", "sun=true", "moon=best"]},
            r"--rule 'moon=add' and --rule 'moon=best' set the same rule: give it once",
        ),
        ({"bots": FIVE, "format": "swiss"}, "--format 'swiss': choose one of"),
        ({"bots": FIVE, "format": "gauntlet"}, "needs --candidate NAME"),
        ({"bots": FIVE, "format": "gauntlet", "candidate": "z"}, "--candidate 'z' is not a bot"),
        ({"bots": FIVE, "candidate": "a"}, "only makes sense with --format gauntlet"),
        ({"bots": FIVE, "boards": 0}, "--boards 0: give 1 to 100000 boards"),
        ({"bots": FIVE, "boards": 1_000_000}, "--boards 1000000: give 1 to 100000 boards"),
        ({"bots": FIVE, "move_time": "4294967296"}, r"--move-time '4294967296': at most a day"),
        ({"bots": FIVE, "time_bank": "2m"}, None),
        ({"bots": FIVE, "time_bank": "1441m"}, r"--time-bank '1441m': at most a day"),
        ({"bots": FIVE, "move_time": "0"}, r"--move-time 0: give each move at least 1 ms"),
        ({"bots": FIVE, "move_time": "0.4"}, r"--move-time '0.4': a duration is a whole number"),
        # Not "expected a duration", as if no number had been given.
        ({"bots": FIVE, "move_time": "-1s"}, r"--move-time '-1s': a duration cannot be negative"),
        ({"bots": FIVE, "time_bank": "2h"}, r"--time-bank '2h': 'h' is not a unit here: give ms"),
        (
            {"bots": FIVE, "game_to": 2**31},
            r"--game-to 2147483648: the target must be 1 to 1000000",
        ),
        ({"bots": FIVE, "rule": ["queen_penalty=99999999999"]}, r"rules.queen_penalty: must be"),
        ({"bots": FIVE, "rule": ["jack_of_diamonds=-1000001"]}, r"rules.jack_of_diamonds: must"),
        ({"bots": FIVE, "db": "/dev/null"}, r"--db /dev/null: not a regular file"),
        ({"bots": FIVE, "game_to": 0}, "--game-to 0"),
        ({"bots": FIVE, "game_to": 50, "rule": ["target=30"]}, "both set the target"),
        ({"bots": FIVE, "concurrency": 0}, "--concurrency 0"),
        ({"bots": FIVE, "move_time": "soon"}, "--move-time 'soon'"),
        ({"bots": FIVE, "port": 70000}, "--port 70000"),
        ({"bots": [*FIVE, "a=true"]}, "--bot 'a' is given twice"),
        ({"bots": [*FIVE[:3], "x=no-such-program-here"]}, "'no-such-program-here' is not found"),
        ({"bots": [*FIVE[:3], "x=/no/such/bot"]}, "'/no/such/bot' does not exist"),
    ],
)
def test_bad_input_is_one_line_that_names_it(
    kwargs: dict[str, object], message: str | None
) -> None:
    if message is None:  # the bound's good side
        build_config(**kwargs)  # type: ignore[arg-type]
        return
    with pytest.raises(ConfigError, match=message) as caught:
        build_config(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_the_known_rules_are_those_a_rule_may_set() -> None:
    # players is a Rules field, but the table size is --players: the list must not offer it.
    with pytest.raises(ConfigError) as caught:
        build_config(bots=FIVE, rule=["colour=red"])
    known = str(caught.value).partition("known rules: ")[2].split(", ")
    assert "players" not in known and "moon" in known
    assert "players" not in rule_names()
    for name in rule_names():  # every name offered is taken
        with pytest.raises(ConfigError) as bad_value:
            build_config(bots=FIVE, rule=[f"{name}=?"])
        assert "is not a rule" not in str(bad_value.value)


def test_out_and_db_folders_that_cannot_be_made_are_refused(tmp_path: Path) -> None:
    a_file = tmp_path / "bot.py"
    a_file.write_text("")
    with pytest.raises(ConfigError, match=r"^--out .*bot.py: is a file; give a folder"):
        build_config(bots=FIVE, out=a_file)
    with pytest.raises(ConfigError, match=r"^--out .*bot.py/x: .*bot.py is a file"):
        build_config(bots=FIVE, out=a_file / "x")
    with pytest.raises(ConfigError, match=r"^--db .*bot.py/x/a.db: .*bot.py is a file"):
        build_config(bots=FIVE, db=a_file / "x" / "a.db")
    assert build_config(bots=FIVE, out=tmp_path / "new" / "out").out == tmp_path / "new" / "out"


def test_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_toml(tmp_path / "absent.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("players = = 4")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_toml(broken)
    with pytest.raises(ConfigError, match="unknown setting"):
        build_config({"colour": "red"})
    with pytest.raises(ConfigError, match=r"bots\.a must be a command"):
        build_config({"bots": {"a": 3}})
    # A bad value from the file names the file's setting, not a flag that was never given.
    with pytest.raises(ConfigError, match=r"^config file: players = 9: a table has 3 to 6"):
        build_config({"players": 9}, bots=FIVE)
    with pytest.raises(ConfigError, match=r"^config file: move_time = 'soon'"):
        build_config({"move_time": "soon"}, bots=FIVE)
    with pytest.raises(ConfigError, match=r"^config file: \[rule\] moon: unknown value 'sideways'"):
        build_config({"rule": {"moon": "sideways"}}, bots=FIVE)
    with pytest.raises(ConfigError, match=r"^config file: strict = 'yes': expected true or false"):
        build_config({"strict": "yes"}, bots=FIVE)
    with pytest.raises(ConfigError, match=r"^--move-time 'later'"):
        build_config({"move_time": "1s"}, bots=FIVE, move_time="later")
    # Both bad: the file's is named first (it is checked as the flag overrides it).
    with pytest.raises(ConfigError, match=r"^config file: move_time = 'soon'"):
        build_config({"move_time": "soon"}, bots=FIVE, move_time="later")
    # A TOML value of the wrong kind, or not a finite number, is one line, not a traceback.
    for setting, says in (
        ({"move_time": float("inf")}, r"^config file: move_time = inf: give a finite duration"),
        ({"move_time": float("nan")}, r"^config file: move_time = nan: give a finite duration"),
        ({"move_time": [1]}, r"^config file: move_time = \[1\]: expected a duration"),
        ({"move_time": True}, r"^config file: move_time = true: expected a duration"),
        ({"db": 5}, r"^config file: db = 5: expected a path"),
        ({"db": ""}, r"^config file: db = '': give a database file"),
        ({"format": ""}, r"^config file: format = '': choose one of round-robin, gauntlet"),
        ({"rules": 5}, r"^config file: rules = 5: expected a preset name"),
        ({"rules": "nope"}, r"^config file: rules = 'nope': not a preset"),
        ({"rule": {"colour": 1}}, r"^config file: \[rule\] 'colour' is not a rule; known rules"),
        ({"out": 5}, r"^config file: out = 5: expected a path"),
        # Checked where the file is known, not later as the run opens it (said `--db` then).
        (
            {"db": str(tmp_path / "nowhere" / "x.db")},
            r"^config file: db = .*x\.db: folder .*nowhere does not exist$",
        ),
    ):
        with pytest.raises(ConfigError, match=says):
            build_config(setting, bots=FIVE)
    # `--out ""` over the file's folder: leaving the flag out gives the file's, not the default.
    with pytest.raises(ConfigError, match=r"leave --out out for the config file's \(kept\)$"):
        build_config({"out": "kept"}, bots=FIVE, out="")
    # Both spellings of one setting: the last one won without a word.
    twice = tmp_path / "twice.toml"
    twice.write_text('move-time = "1s"\nmove_time = "2s"\n')
    with pytest.raises(
        ConfigError, match=r"twice.toml: move-time and move_time are one setting, move_time: give"
    ):
        load_toml(twice)
    with pytest.raises(
        ConfigError,
        match=r"^config file: \[rule\] queen-penalty and queen_penalty are one rule, queen_penalty",
    ):
        build_config({"rule": {"queen-penalty": 5, "queen_penalty": 6}}, bots=FIVE)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"players = 4\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin.toml: not UTF-8 text \(byte 17\)"):
        load_toml(latin)
    # A byte-order mark (Notepad's "UTF-8 with BOM") was "Invalid statement (at line 1,
    # column 1)", pointing at nothing an editor shows.
    marked = tmp_path / "marked.toml"
    marked.write_bytes(b"\xef\xbb\xbfplayers = 4\n")
    with pytest.raises(ConfigError, match=r"marked.toml: starts with a byte-order mark .*: save"):
        load_toml(marked)
    # A NUL (TOML's "\u0000") in a path or a command was a traceback, ValueError: embedded
    # null byte, from the path's lookup or the bot's start.
    for text, where in (
        ('db = "nu\\u0000l.db"', "db"),
        ('[bots]\na = ["python", "bot.py\\u0000x"]', r"bots\.a\[1\]"),
        ('[bots]\n"b\\u0000" = "python bot.py"', "bots.b\\\\x00"),
    ):
        nul = tmp_path / "nul.toml"
        nul.write_text(text + "\n")
        with pytest.raises(ConfigError, match=rf"nul.toml: {where} holds a NUL character"):
            load_toml(nul)


def test_round_robin_plays_every_board_in_every_rotation_of_every_group() -> None:
    config = build_config(bots=FIVE, boards=3, seed=4)
    tables = schedule(config)
    all_groups = groups(config)
    assert all_groups == tuple(combinations("abcde", 4))
    assert len(tables) == 3 * 5 * 4
    assert [t.index for t in tables] == list(range(len(tables)))
    assert len({t.spec.table_id for t in tables}) == len(tables)
    # Board-major: a half-played run has met every group about equally.
    assert [t.board for t in tables[:20]] == [0] * 20
    for board in range(3):
        these = [t for t in tables if t.board == board]
        assert {t.spec.seed for t in these} == {board_seed(4, board)}
        assert {t.spec.board for t in these} == {f"4:{board}"}
        for g, group in enumerate(all_groups):
            seatings = [t.spec.seats for t in these if t.group == g]
            # Every bot holds every seat's cards exactly once per board.
            for seat in range(4):
                assert sorted(s[seat] for s in seatings) == sorted(group)
    assert all(t.spec.hands == 1 for t in tables)
    # Single-hand boards take the pass directions of a game in turn: left, right, across.
    directions = [t.spec.rules.pass_direction(0).value for t in tables if t.index % 20 == 0]
    assert directions == ["left", "right", "across"]
    assert all(t.spec.rules.replace(pass_cycle=None) == Rules() for t in tables)
    assert len({board_seed(4, b) for b in range(100)}) == 100
    assert board_seed(4, 0) != board_seed(5, 0)


def test_rotation_moves_every_bot_one_seat() -> None:
    assert rotation(("a", "b", "c", "d"), 0) == ("a", "b", "c", "d")
    assert rotation(("a", "b", "c", "d"), 1) == ("d", "a", "b", "c")
    assert rotation(("a", "b", "c"), 2) == ("b", "c", "a")


def test_gauntlet_puts_the_candidate_at_every_table() -> None:
    config = build_config(
        bots=FIVE, players=3, format="gauntlet", candidate="c", boards=2, game_to=60
    )
    assert config.format is Format.GAUNTLET
    tables = schedule(config)
    assert len(tables) == 2 * 6 * 3  # C(4, 2) pairs of opponents, 3 rotations
    assert all("c" in t.spec.seats for t in tables)
    opponents = Counter(name for t in tables for name in t.spec.seats if name != "c")
    assert set(opponents.values()) == {2 * 3 * 3}
    assert all(t.spec.hands is None and t.spec.rules.target == 60 for t in tables)
    assert all(t.spec.rules.pass_cycle is None for t in tables)  # a game cycles by itself


def test_sprt_schedule_is_endless_boards_in_every_rotation() -> None:
    stream = sprt_tables(("a", "b", "f"), Rules(players=3), 3, Clocks(), FaultPolicy())
    first = [next(stream) for _ in range(7)]
    assert [t.board for t in first] == [0, 0, 0, 1, 1, 1, 2]
    assert [t.index for t in first] == list(range(7))
    assert first[1].spec.seats == ("f", "a", "b")
    assert first[3].spec.seed == board_seed(3, 1)
    assert first[3].spec.rules.pass_direction(0).value == "right"
    no_pass = Rules(players=3, pass_count=0)
    assert board_rules(no_pass, 1) is no_pass


def test_the_fault_policy_comes_from_flags_or_the_file_and_is_part_of_the_run() -> None:
    default = build_config(bots=FIVE)
    assert default.faults == FaultPolicy()
    strict = build_config(bots=FIVE, strict=True, grace="2s")
    assert strict.faults == FaultPolicy(strict=True, grace_ms=2000)
    assert strict.faults.faults_allowed == 0
    # A --strict flag over a file's limit: the flag wins, as flags do.
    flagged = build_config({"max_faults": 1}, bots=FIVE, strict=True)
    assert flagged.faults == FaultPolicy(max_faults=1, strict=True)
    from_file = build_config({"max_faults": 5, "strict": False}, bots=FIVE)
    assert from_file.faults.max_faults == 5
    # Another fault policy decides games differently: it is another run.
    assert strict.run_id != default.run_id
    with pytest.raises(ConfigError, match="--max-faults -1"):
        build_config(bots=FIVE, max_faults=-1)
    # Named by its flag: past the protocol's 32 bits it was refused as "faults.max_faults".
    with pytest.raises(ConfigError, match=r"^--max-faults 4294967296: give 0 to 4294967295"):
        build_config(bots=FIVE, max_faults=2**32)
    with pytest.raises(ConfigError, match="strict"):
        build_config({"strict": "yes"}, bots=FIVE)


def test_a_fault_limit_that_strict_mode_overrules_is_refused() -> None:
    # Taken and silently ignored: strict mode forfeits a seat at its first fault.
    cases: list[tuple[dict[str, Any], bool | None, int | None, str]] = [
        ({}, True, 5, "--max-faults 5 has no effect with --strict "),
        ({"strict": True}, None, 5, "--max-faults 5 has no effect: the config file "),
        ({"strict": True, "max_faults": 5}, None, None, "config file: max_faults = 5 has no eff"),
    ]
    for file, strict, max_faults, said in cases:
        with pytest.raises(ConfigError, match=f"^{re.escape(said)}"):
            build_config(file, bots=FIVE, strict=strict, max_faults=max_faults)
    # --no-strict over the file's strict mode lets the limit count again.
    loose = build_config({"strict": True}, bots=FIVE, strict=False, max_faults=5)
    assert loose.faults == FaultPolicy(max_faults=5, strict=False)
    with pytest.raises(ConfigError, match="--grace"):
        build_config(bots=FIVE, grace="soon")


def test_a_zero_in_the_file_is_zero_not_the_default() -> None:
    zero = build_config({"time_bank": 0, "grace": 0}, bots=FIVE)
    assert (zero.clocks.bank_ms, zero.faults.grace_ms) == (0, 0)
    # As from the flags: no time per move is refused, not replaced by the default.
    with pytest.raises(ConfigError, match=r"^config file: move_time = 0: give each move"):
        build_config({"move_time": 0}, bots=FIVE)


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('players = "4"', "players = '4': expected a whole number, not a string"),
        ('boards = "3"', "boards = '3': expected a whole number, not a string"),
        ("boards = 3.0", "boards = 3.0: expected a whole number"),
        ('game_to = "100"', "game_to = '100': expected a whole number, not a string"),
        ('concurrency = "2"', "concurrency = '2': expected a whole number, not a string"),
        ('seed = "7"', "seed = '7': expected a whole number, not a string"),
        ('port = "0"', "port = '0': expected a whole number, not a string"),
        # As the file spells it: True is Python's word, not TOML's.
        ("max_faults = true", "max_faults = true: expected a whole number, not true or false"),
        ("boards = 2024-01-01", "boards = 2024-01-01: expected a whole number"),
        ("format = 3", 'format = 3: expected a format name in quotes, e.g. "round-robin"'),
        ("[rule]\nqueen_penalty = true", r"\[rule\] queen_penalty = true: expected a whole number"),
        ('max_faults = "3"', "max_faults = '3': expected a whole number, not a string"),
        ('strict = "true"', "strict = 'true': expected true or false"),
        ('[rule]\nqueen_penalty = "13"', r"\[rule\] queen_penalty = '13': expected a whole number"),
        ('[rule]\nkitty = "yes"', r"\[rule\] kitty = 'yes': expected true or false"),
        ("[rule]\nkitty = 1", r"\[rule\] kitty = 1: expected true or false"),
        ('[rule]\nmoon_points = "26"', r"\[rule\] moon_points = '26': expected a whole number"),
    ],
)
def test_a_file_value_of_another_toml_type_is_refused_naming_its_key(
    tmp_path: Path, toml: str, says: str
) -> None:
    # `boards = "3"` was taken as 3: a number in quotes is a mistake the file's author should see.
    file = tmp_path / "run.toml"
    file.write_text(toml + "\n")
    with pytest.raises(ConfigError, match=f"^config file: {says}") as caught:
        build_config(load_toml(file), bots=FIVE)
    assert "\n" not in str(caught.value)


def test_file_values_of_their_own_toml_type_are_taken(tmp_path: Path) -> None:
    file = tmp_path / "run.toml"
    file.write_text(
        "players = 4\nboards = 3\ngame_to = 50\nconcurrency = 2\nseed = 7\nport = 0\n"
        'grace = "2s"\nstrict = true\nmove_time = "500ms"\ntime_bank = 2000\n'
        '[rule]\nqueen_penalty = 10\nkitty = false\nmoon_points = "none"\nmoon = "best"\n'
    )
    config = build_config(load_toml(file), bots=FIVE)
    assert (config.players, config.boards, config.game_to, config.seed) == (4, 3, 50, 7)
    assert (config.concurrency, config.faults.grace_ms, config.faults.strict) == (2, 2000, True)
    assert (config.clocks.move_ms, config.clocks.bank_ms) == (500, 2000)
    assert (config.rules.queen_penalty, config.rules.moon_points) == (10, None)


def test_a_seed_is_0_to_2_63_minus_1() -> None:
    # Elsewhere -1 often asks for a random seed; here it would silently be one more fixed deal.
    assert build_config(bots=FIVE, seed=0).seed == 0
    assert build_config(bots=FIVE, seed=MAX_SEED).seed == 2**63 - 1
    for bad in (-1, MAX_SEED + 1):
        with pytest.raises(ConfigError, match=rf"^--seed {bad}: a seed is a whole number from 0 "):
            build_config(bots=FIVE, seed=bad)
    with pytest.raises(ConfigError, match=r"^config file: seed = -1: a seed is a whole number"):
        build_config({"seed": -1}, bots=FIVE)


def test_a_format_flag_overrides_a_gauntlet_file_and_its_candidate() -> None:
    # A flag overrides the file: `--format round-robin` on a gauntlet's file plays the round
    # robin; the file's candidate belongs to the gauntlet it replaced, and no flag could unset it.
    file = {"bots": dict(b.split("=") for b in FIVE), "format": "gauntlet", "candidate": "c"}
    config = build_config(file, players=3, format="round-robin")
    assert config.format is Format.ROUND_ROBIN and config.candidate is None
    assert build_config(file, players=3).candidate == "c"
    assert build_config(file, players=3, format="gauntlet", candidate="d").candidate == "d"
    # A file that names a candidate for its own round robin is still a mistake to name.
    with pytest.raises(ConfigError, match="only makes sense with --format gauntlet"):
        build_config({**file, "format": "round-robin"}, players=3)
