"""Config files laid out wrongly, as TOML lets them be: a setting written below a table's
header lands in that table, `[rules]` is not `[rule]`, and `arena serve` reads one rule given
twice, or a target given twice, as `arena run` does: each is one line naming the cause."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.config import build_config, load_toml
from arena.errors import ConfigError
from arena.server.config import load_server_config

ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
BOTS = ["a=python a.py", "b=python b.py", "c=python c.py", "d=python d.py"]


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[bots]\nlow = "python low.py"\nmove_time = "500ms"\n',
            r"^config file: bots\.move_time = '500ms' is read as a bot \(move_time is a setting: "
            r"TOML puts every key after the \[bots\] line in \[bots\], so write it above that "
            r"line\); a bot of that name: call it something else$",
        ),
        ('[bots]\nlow = "python low.py"\nboards = 3\n', r"^config file: bots\.boards = 3 is read"),
        ('[bots]\nlow = "python low.py"\nmove-time = "1s"\n', r"bots\.move-time = '1s' is read"),
        (
            '[rules]\nmoon = "best"\n',
            r"^config file: rules = \{moon = 'best'\}: expected a preset name in quotes, e\.g\. "
            r'"standard" \(a rules table of NAME = VALUE options is \[rule\], without the s\)$',
        ),
    ],
)
def test_a_run_config_laid_out_wrongly_says_where_the_key_belongs(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        build_config(load_toml(_file(tmp_path, text)), bots=BOTS, check_commands=False)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[rule]\nqueen_penalty = 10\nqueen-penalty = 5\n",
            r"^server config: \[rule\] queen_penalty and queen-penalty are one rule, "
            r"queen_penalty: give it once$",
        ),
        (
            "game_to = 50\n[rule]\ntarget = 60\n",
            r"^server config: game_to = 50 and \[rule\] target both set the target: give one of "
            r"them$",
        ),
        (
            '[rules]\nmoon = "best"\n',
            r"^server config: rules = \{moon = 'best'\}: .* \(a rules table of NAME = VALUE "
            r"options is \[rule\], without the s\)$",
        ),
        (
            '[event]\nentrants = ["a", "b", "c", "d"]\nmove_time = "2s"\n',
            r"^server config: unknown \[event\] key\(s\) move_time; known: .* \(move_time is a "
            r"setting: TOML puts every key after the \[event\] line in \[event\], so write it "
            r"above that line\)$",
        ),
    ],
)
def test_a_server_config_laid_out_wrongly_is_refused_naming_the_cause(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        load_server_config(_file(tmp_path, text))


def test_arena_serve_refuses_a_rule_given_twice_in_one_line_and_makes_nothing(
    tmp_path: Path,
) -> None:
    # The later spelling won silently, and a competition's rules are fixed at its first table.
    config = _file(tmp_path, "[rule]\nqueen_penalty = 10\nqueen-penalty = 5\n")
    done = subprocess.run(
        [*BASE, "serve", "--config", str(config), "--db", "s.db", "--port", "0", "--web-port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "arena: error: server config: [rule] queen_penalty and queen-penalty are one rule, "
        "queen_penalty: give it once"
    ]
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("setting", "flags", "said"),
    [
        (
            {"players": "three"},
            {"players": 4},
            r"^config file: players = 'three': expected a whole number, not a string",
        ),
        (
            {"move_time": "fast"},
            {"move_time": "100"},
            r"^config file: move_time = 'fast': expected a duration",
        ),
        ({"seed": -5}, {"seed": 2}, r"^config file: seed = -5: a seed is a whole number from 0"),
        ({"boards": "3"}, {"boards": 1}, r"^config file: boards = '3': expected a whole number"),
        ({"strict": "yes"}, {"strict": False}, r"^config file: strict = 'yes': expected true or"),
    ],
)
def test_a_bad_file_setting_is_refused_though_a_flag_overrides_it(
    tmp_path: Path, setting: dict[str, object], flags: dict[str, object], said: str
) -> None:
    # It passed unseen, and the same file failed the day it ran without the flag.
    with pytest.raises(ConfigError, match=said):
        build_config(
            setting,
            bots=BOTS,
            check_commands=False,
            db=tmp_path / "a.db",
            **flags,  # type: ignore[arg-type]
        )
    # The flag alone is good.
    build_config(bots=BOTS, check_commands=False, **{"db": tmp_path / "a.db", **flags})  # type: ignore[arg-type]


def test_a_blank_file_db_is_refused_though_db_is_given(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^config file: db = '': give a database file"):
        build_config({"db": ""}, bots=BOTS, check_commands=False, db=tmp_path / "a.db")


@pytest.mark.parametrize(
    ("setting", "flags", "said"),
    [
        ({"format": "swiss"}, {"format": "round-robin"}, r"^config file: format = 'swiss': choose"),
        ({"format": 3}, {"format": "round-robin"}, r"^config file: format = 3: expected a format"),
        ({"rules": "nonsense"}, {"rules": "standard"}, r"^config file: rules = 'nonsense': not a"),
        # A [rules] table under --rules: its options were dropped without a word.
        (
            {"rules": {"moon": "best"}},
            {"rules": "omnibus"},
            r"^config file: rules = \{moon = 'best'\}: .* is \[rule\], without the s\)$",
        ),
        ({"out": 3}, {"out": "o1"}, r"^config file: out = 3: expected a path"),
        ({"out": ""}, {"out": "o1"}, r"^config file: out = '': give a folder$"),
        ({"db": "/"}, {}, r"^config file: db = /: is a folder, not a database file$"),
        (
            {"db": "/nonexistent_dir/q/x.db"},
            {},
            r"^config file: db = /nonexistent_dir/q/x\.db: folder /nonexistent_dir/q does not",
        ),
        (
            {"candidate": "bad name!"},
            {"format": "gauntlet", "candidate": "a"},
            r"^config file: candidate = 'bad name!': not a bot's name \(it has ' '\)$",
        ),
        (
            {"candidate": ""},
            {"format": "gauntlet", "candidate": "a"},
            r"^config file: candidate = '': not a bot's name \(it is empty\)$",
        ),
        # Dropped by --format round-robin with the gauntlet it went with: its type still checked.
        (
            {"format": "gauntlet", "candidate": True},
            {"format": "round-robin"},
            r"^config file: candidate = true: expected a bot's name in quotes",
        ),
    ],
)
def test_every_file_setting_a_flag_overrides_is_checked(
    tmp_path: Path, setting: dict[str, object], flags: dict[str, object], said: str
) -> None:
    given = {"db": tmp_path / "a.db", **flags}
    with pytest.raises(ConfigError, match=said):
        build_config(setting, bots=BOTS, check_commands=False, **given)  # type: ignore[arg-type]
    build_config(bots=BOTS, check_commands=False, **given)  # type: ignore[arg-type]


@pytest.mark.parametrize("server", [False, True])
def test_a_setting_written_below_rule_says_where_it_belongs(tmp_path: Path, server: bool) -> None:
    config = _file(tmp_path, '[rule]\nmoon = "best"\nmove_time = 500\n')
    note = (
        r" \(move_time is a setting: TOML puts every key after the \[rule\] line in \[rule\], "
        r"so write it above that line\)$"
    )
    if server:
        with pytest.raises(
            ConfigError,
            match=r"^server config: \[rule\] 'move_time' is not a rule; known rules: .*" + note,
        ):
            load_server_config(config)
    else:
        with pytest.raises(
            ConfigError,
            match=r"^config file: \[rule\] 'move_time' is not a rule; known rules: .*" + note,
        ):
            build_config(load_toml(config), bots=BOTS, check_commands=False)


def test_an_event_table_names_the_setting_among_several_unknown_keys(tmp_path: Path) -> None:
    config = _file(tmp_path, '[event]\nentrants = ["a", "b", "c", "d"]\naaa = 1\nmove_time = 5\n')
    with pytest.raises(
        ConfigError, match=r"key\(s\) aaa, move_time; known: .* \(move_time is a setting"
    ):
        load_server_config(config)
