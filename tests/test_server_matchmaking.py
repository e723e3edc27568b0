"""Ladder and event matchmaking: fair seating, close ratings, duplicate boards in every rotation."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations
from typing import Any, NamedTuple

import pytest

from arena.errors import ConfigError
from arena.server.matchmaking import (
    Candidate,
    EventFormat,
    OwedBoard,
    Plan,
    PlannedTable,
    board_name,
    board_seed,
    event_schedule,
    plan_event,
    plan_ladder,
    prune_owed,
    rotate,
)


def test_rotate_moves_every_bot_one_seat_per_rotation() -> None:
    group = ("a", "b", "c", "d")
    assert rotate(group, 0) == group
    assert rotate(group, 1) == ("d", "a", "b", "c")
    seen = {rotate(group, r) for r in range(4)}
    assert len(seen) == 4
    for seat in range(4):
        assert {rotate(group, r)[seat] for r in range(4)} == set(group)


def test_too_few_bots_make_no_table() -> None:
    plan = plan_ladder(
        [Candidate(n, 1, 0) for n in "abc"],
        (),
        players=4,
        ladder_seed=1,
        secret="s",
        next_board=0,
        seed=0,
    )
    assert plan.tables == () and plan.owed == () and plan.next_board == 0


def test_single_sessions_deal_one_rotation_and_owe_the_rest() -> None:
    plan = plan_ladder(
        [Candidate(n, 1, 0) for n in "abcd"],
        (),
        players=4,
        ladder_seed=7,
        secret="s",
        next_board=3,
        seed=1,
    )
    assert len(plan.tables) == 1
    table = plan.tables[0]
    assert sorted(table.seats) == list("abcd") and table.rotation == 0
    assert table.board == "7:3" and plan.next_board == 4
    (owed,) = plan.owed
    assert owed.board == "7:3" and owed.seed == table.seed and owed.rotations == (1, 2, 3)
    assert owed.group == table.seats


def test_many_sessions_deal_every_rotation_at_once() -> None:
    plan = plan_ladder(
        [Candidate(n, 4, 0) for n in "abcd"],
        (),
        players=4,
        ladder_seed=7,
        secret="s",
        next_board=0,
        seed=2,
    )
    assert [t.rotation for t in plan.tables] == [0, 1, 2, 3]
    assert len({t.seed for t in plan.tables}) == 1 and plan.owed == ()
    for seat in range(4):
        assert {t.seats[seat] for t in plan.tables} == set("abcd")


def test_owed_rotation_is_dealt_when_its_group_is_idle_again() -> None:
    owed = OwedBoard("7:5", 99, ("a", "b", "c", "d"), (2, 3), 5)
    plan = plan_ladder(
        [Candidate(n, 1, 1) for n in "abcd"],
        (owed,),
        players=4,
        ladder_seed=7,
        secret="s",
        next_board=6,
        seed=3,
    )
    # The board keeps its number (its pass direction) in the rotations dealt later.
    assert plan.tables == (PlannedTable(rotate("abcd", 2), 99, "7:5", 2, 5),)
    assert plan.owed == (OwedBoard("7:5", 99, ("a", "b", "c", "d"), (3,), 5),)
    assert plan.next_board == 6


def test_the_least_played_bot_is_not_starved_by_owed_boards() -> None:
    owed = OwedBoard("7:0", 99, ("a", "b", "c", "d"), (1, 2, 3), 0)
    cands = [Candidate(n, 1, 1) for n in "abcd"] + [Candidate("e", 1, 0)]
    plan = plan_ladder(cands, (owed,), players=4, ladder_seed=7, secret="s", next_board=1, seed=4)
    (table,) = plan.tables
    assert "e" in table.seats and table.board == "7:1"


def test_new_groups_favour_close_ratings() -> None:
    strong = [Candidate(f"s{i}", 1, 0, rating=40.0 + i) for i in range(4)]
    weak = [Candidate(f"w{i}", 1, 0, rating=10.0 + i) for i in range(4)]
    for seed in range(20):
        plan = plan_ladder(
            strong + weak,
            (),
            players=4,
            ladder_seed=1,
            secret="s",
            next_board=0,
            seed=seed,
            duplicate=False,
        )
        assert len(plan.tables) == 2
        for table in plan.tables:
            assert len({name[0] for name in table.seats}) == 1, table.seats


def test_bots_with_few_games_are_seated_first() -> None:
    cands = [Candidate(f"old{i}", 1, 50) for i in range(4)] + [
        Candidate(f"new{i}", 1, 0) for i in range(4)
    ]
    plan = plan_ladder(
        cands, (), players=4, ladder_seed=1, secret="s", next_board=0, seed=5, max_tables=1
    )
    (table,) = plan.tables
    assert all(name.startswith("new") for name in table.seats)


def test_no_bot_sits_twice_at_a_table_nor_beyond_its_idle_sessions() -> None:
    cands = [Candidate(n, k, 0) for n, k in zip("abcdefg", (3, 1, 2, 5, 1, 1, 2), strict=True)]
    for seed in range(30):
        plan = plan_ladder(cands, (), players=4, ladder_seed=1, secret="s", next_board=0, seed=seed)
        used: Counter[str] = Counter()
        for t in plan.tables:
            assert len(set(t.seats)) == 4
            used.update(t.seats)
        for c in cands:
            assert used[c.name] <= c.idle
        # Nothing is left that could have formed one more table.
        left = [c.name for c in cands if c.idle - used[c.name] > 0]
        assert len(left) < 4 or plan.owed


def test_max_tables_bounds_a_plan() -> None:
    plan = plan_ladder(
        [Candidate(n, 4, 0) for n in "abcdefgh"],
        (),
        players=4,
        ladder_seed=1,
        secret="s",
        next_board=0,
        seed=6,
        max_tables=3,
    )
    assert len(plan.tables) == 3


def test_plan_is_a_function_of_its_inputs() -> None:
    cands = [Candidate(n, 2, i) for i, n in enumerate("abcdefgh")]
    one = plan_ladder(cands, (), players=4, ladder_seed=1, secret="s", next_board=0, seed=9)
    two = plan_ladder(cands, (), players=4, ladder_seed=1, secret="s", next_board=0, seed=9)
    assert one == two


def test_round_robin_event_has_every_combination_board_and_rotation() -> None:
    schedule = event_schedule("abcde", players=4, boards=2, seed=5)
    assert len(schedule) == 5 * 2 * 4
    boards = Counter(t.board for t in schedule)
    assert len(boards) == 10 and set(boards.values()) == {4}
    by_board: dict[str, set[tuple[str, ...]]] = {}
    for t in schedule:
        by_board.setdefault(t.board, set()).add(t.seats)
    assert all(len(seatings) == 4 for seatings in by_board.values())
    assert schedule == event_schedule("abcde", players=4, boards=2, seed=5)
    # Boards are numbered in schedule order; every rotation of a board has its number.
    assert [t.number for t in schedule] == [i // 4 for i in range(40)]


def test_gauntlet_event_always_seats_the_candidate() -> None:
    schedule = event_schedule(
        "abcde", players=4, boards=1, seed=5, format=EventFormat.GAUNTLET, candidate="c"
    )
    assert len(schedule) == 4 * 4
    assert all("c" in t.seats for t in schedule)


def test_event_schedule_refuses_bad_entrants() -> None:
    with pytest.raises(ConfigError, match="at least 4 entrants"):
        event_schedule("abc", players=4, boards=1, seed=1)
    with pytest.raises(ConfigError, match="twice"):
        event_schedule(["a", "a", "b", "c"], players=3, boards=1, seed=1)
    with pytest.raises(ConfigError, match="candidate"):
        event_schedule("abcd", players=4, boards=1, seed=1, format=EventFormat.GAUNTLET)


def test_plan_event_starts_tables_whose_bots_are_idle() -> None:
    schedule = event_schedule("abcde", players=4, boards=1, seed=5)
    chosen = plan_event(schedule, {"a": 1, "b": 1, "c": 1, "d": 1})
    assert chosen == (schedule[0],)
    chosen = plan_event(schedule, {n: 4 for n in "abcde"})
    used: Counter[str] = Counter(b for t in chosen for b in t.seats)
    # Greedy in schedule order: the first board's four rotations take a-d's every session.
    assert chosen == schedule[:4] and used == Counter({n: 4 for n in "abcd"})


def test_owed_boards_expire_by_age_and_count() -> None:
    owed = [OwedBoard(f"1:{i}", i, ("a", "b", "c", "d"), (1, 2, 3), i) for i in range(10)]
    assert prune_owed(owed, 10, max_age=100, max_count=100) == tuple(owed)
    assert prune_owed(owed, 10, max_age=3, max_count=100) == tuple(owed[7:])
    assert prune_owed(owed, 10, max_age=100, max_count=4) == tuple(owed[6:])
    assert prune_owed(owed, 10, max_age=100, max_count=0) == ()


def test_board_seeds_are_keyed_by_the_secret_not_by_the_public_name() -> None:
    cands = [Candidate(n, 1, 0) for n in "abcd"]
    plan = plan_ladder(cands, (), players=4, ladder_seed=1, secret="k1", next_board=7, seed=1)
    (table,) = plan.tables
    assert table.board == board_name(1, 7) == "1:7"
    assert table.seed == board_seed("k1", 1, 7) != board_seed("k2", 1, 7)
    # The old seed, which anyone could compute from the board's name.
    assert table.seed != random.Random("1:7").getrandbits(63)
    schedule = event_schedule("abcd", players=4, boards=2, seed=5, secret="k1")
    assert [t.seed for t in schedule[::4]] == [board_seed("k1", 5, 0), board_seed("k1", 5, 1)]
    assert event_schedule("abcd", players=4, boards=2, seed=5, secret="k2") != schedule


def ladder(cands: list[Candidate], owed: tuple[OwedBoard, ...] = (), **given: Any) -> Plan:
    """plan_ladder for 4 players on ladder seed 1, board 0 next, seed 0, unless ``given``."""
    settings: dict[str, Any] = dict(players=4, ladder_seed=1, secret="s", next_board=0, seed=0)
    return plan_ladder(cands, owed, **(settings | given))


def test_a_group_is_held_rather_than_seated_together_again_while_others_play() -> None:
    group = frozenset("abcd")
    kwargs: dict[str, Any] = dict(next_board=5, seed=3, previous=dict.fromkeys(group, group))
    cands = [Candidate(n, 1, 4) for n in "abcd"]
    plan = ladder(cands, busy=set("efgh"), **kwargs)
    assert plan.tables == () and plan.held == (group,) and plan.next_board == 5
    # Nobody else to wait for (every bot at a table is one of them), or waited long enough.
    for busy, may_repeat in ((set("abc"), ()), (set("efgh"), {group})):
        plan = ladder(cands, busy=busy, may_repeat=may_repeat, **kwargs)
        assert [set(t.seats) for t in plan.tables] == [group] and plan.held == ()
    # Another idle bot to play with: a new group, not the old one, and nothing held.
    plan = ladder([*cands, Candidate("e", 1, 4)], busy=set("fgh"), **kwargs)
    (table,) = plan.tables
    assert "e" in table.seats and plan.held == ()
    # An owed rotation of the same group is its board's, not a rematch: dealt at once.
    owed = OwedBoard("1:4", 9, tuple("abcd"), (1, 2, 3), 4)
    plan = ladder(cands, (owed,), busy=set("efgh"), **kwargs)
    assert [t.board for t in plan.tables] == ["1:4"] and plan.held == ()


def test_new_groups_favour_bots_met_least() -> None:
    halves = ("abcd", "efgh")
    meetings = {frozenset(p): 20 for half in halves for p in combinations(half, 2)}
    for seed in range(20):
        cands = [Candidate(n, 1, 0) for n in "abcdefgh"]
        plan = ladder(cands, seed=seed, duplicate=False, meetings=meetings)
        # The first group's anchor takes the three it met least: all from the other half.
        first = plan.tables[0].seats
        assert sorted(sum(bot in half for bot in first) for half in halves) == [1, 3], first


def test_a_new_group_leaves_out_bots_whose_owed_board_is_ready() -> None:
    owed = OwedBoard("1:0", 9, tuple("efgh"), (1, 2, 3), 0)
    cands = [Candidate(n, 1, 0) for n in "abcd"] + [Candidate(n, 1, 1) for n in "efgh"]
    for seed in range(20):
        plan = ladder(cands, (owed,), next_board=1, seed=seed)
        # Both tables start: the new board's group does not break up the owed one's.
        assert sorted((t.board, "".join(sorted(t.seats))) for t in plan.tables) == [
            ("1:0", "efgh"),
            ("1:1", "abcd"),
        ]


def test_a_ready_owed_board_is_dealt_before_a_new_group_takes_its_bots() -> None:
    # Thirteen bots, three at tables: the one left over took three of a table's bots as it
    # ended, and that group's owed board waited for it to be idle together again (85 boards of
    # 800 owed, where twelve bots left 3).
    group = frozenset("abcd")
    owed = (OwedBoard("1:0", 9, tuple("abcd"), (1, 2, 3), 0),)
    cands = [Candidate(n, 1, 4) for n in "abcd"] + [Candidate("m", 1, 0)]
    previous = dict.fromkeys(group, group)
    for busy in (set("efghijkl"), ()):
        plan = ladder(cands, owed, next_board=5, busy=busy, previous=previous)
        assert [(t.board, t.rotation) for t in plan.tables] == [("1:0", 1)]
        assert plan.held == () and plan.next_board == 5
    # Not mixing (mix_wait "0s"): as before, the bot with fewest games is seated first.
    (table,) = ladder(cands, owed, next_board=5, busy=set("efghijkl")).tables
    assert "m" in table.seats and table.board == "1:5"


def test_an_owed_board_waits_if_dealing_it_first_would_start_fewer_tables() -> None:
    # Two bots left over, of two sessions each, and a group with one session left each: dealt
    # first, the board would leave four sessions idle that two tables could have used.
    owed = (OwedBoard("1:0", 9, tuple("abcd"), (2, 3), 0),)
    cands = [Candidate(n, 1, 8) for n in "abcd"] + [Candidate(n, 2, 6) for n in "ef"]
    plan = ladder(cands, owed, next_board=5, busy=set("abcd"), previous={})
    assert len(plan.tables) == 2 and plan.held == ()
    assert all(set("ef") <= set(t.seats) for t in plan.tables)


class Ladder(NamedTuple):
    """What :func:`simulate_ladder` saw."""

    groups: list[frozenset[str]]
    """Each game's bots, in the order the games ended."""
    time: float
    """When the last counted game ended."""
    most_owed: int
    """The most boards owed at once."""


def simulate_ladder(
    bots: int, games: int, *, mix: bool, seed: int = 0, slow: int = 0, wait: float = 3.0
) -> Ladder:
    """Play a ladder of ``bots`` bots with one session each, tables of random lengths, planning
    as the competition does (holding groups for at most ``wait`` table lengths when ``mix``); a
    table lasts 0.5 to 1.5, ten times as long with one of the first ``slow`` bots at it."""
    rng = random.Random(seed)
    names = [f"b{i:02}" for i in range(bots)]
    idle = set(names)
    played: Counter[str] = Counter()
    meetings: Counter[frozenset[str]] = Counter()
    previous: dict[str, frozenset[str]] = {}
    held_since: dict[frozenset[str], float] = {}
    running: list[tuple[float, int, tuple[str, ...]]] = []
    owed: tuple[OwedBoard, ...] = ()
    groups: list[frozenset[str]] = []
    now, next_board, serial, most_owed = 0.0, 0, 0, 0
    while len(groups) < games:
        plan = plan_ladder(
            [Candidate(n, 1, played[n]) for n in sorted(idle)],
            owed,
            players=4,
            ladder_seed=1,
            secret="s",
            next_board=next_board,
            seed=rng.getrandbits(63),
            meetings=meetings if mix else None,
            previous=previous if mix else None,
            busy={b for _, _, seats in running for b in seats},
            may_repeat={g for g, t in held_since.items() if now >= t + wait},
        )
        owed, next_board = plan.owed, plan.next_board
        most_owed = max(most_owed, len(owed))
        held_since = {g: held_since.get(g, now) for g in plan.held}
        for table in plan.tables:
            idle.difference_update(table.seats)
            played.update(table.seats)
            pace = 10 if any(bot in names[:slow] for bot in table.seats) else 1
            running.append((now + pace * rng.uniform(0.5, 1.5), serial, table.seats))
            serial += 1
        running.sort()
        wake = [t + wait for t in held_since.values()]
        if running and (not wake or running[0][0] <= min(wake)):
            now, _, seats = running.pop(0)
            members = frozenset(seats)
            groups.append(members)
            idle.update(members)
            for pair in combinations(sorted(members), 2):
                meetings[frozenset(pair)] += 1
            for bot in members:
                previous[bot] = members
        else:
            now = min(wake)
    return Ladder(groups, now, most_owed)


def test_the_ladder_mixes_a_table_of_single_session_bots_with_the_others() -> None:
    # A table's bots are the only ones idle when it ends: unmixed, they sat down together
    # again and again (a soak's 12 bots: 30 foursomes in 36,768 games, 9 pairs never met).
    unmixed = simulate_ladder(12, 600, mix=False).groups
    mixed = simulate_ladder(12, 600, mix=True).groups
    pairs = {frozenset(p) for p in combinations([f"b{i:02}" for i in range(12)], 2)}
    met = {frozenset(p) for g in mixed for p in combinations(g, 2)}
    assert met == pairs
    assert len(set(mixed)) > 3 * len(set(unmixed))


def test_a_slow_bots_tablemates_change_from_board_to_board() -> None:
    # Its tables end last, so its tablemates had the fewest games, and the games term (then
    # unbounded) seated them with it again and again: an audit's slow bot only ever sat with
    # the same two bots, and 18 pairs never met.
    for seed in range(3):
        groups = simulate_ladder(12, 600, mix=True, seed=seed, slow=1).groups
        slow = [g for g in groups if "b00" in g]
        mates = Counter(bot for g in slow for bot in g if bot != "b00")
        assert len(mates) >= 8 and max(mates.values()) <= len(slow) / 2, (len(slow), mates)


@pytest.mark.parametrize("bots", [9, 13, 17])
def test_owed_boards_are_dealt_with_bots_left_over(bots: int) -> None:
    # Bots left over broke up the groups of owed boards: before, 23 to 27 boards owed at once
    # with 9 bots, 85 with 13, 178 with 17 (of about 800), their rotations dealt late or never.
    for seed in range(2):
        ladder = simulate_ladder(bots, 1200, mix=True, seed=seed, wait=800.0)
        assert ladder.most_owed <= 5, ladder.most_owed
        # The games are not fewer for it: every table is busy but for the bots left over.
        per_table = ladder.time / (1200 / (bots // 4))
        assert per_table < 1.1, per_table
