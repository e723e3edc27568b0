"""Properties of every hand over random seeds, for every table size, preset and rules option.

Random play is checked move by move against an oracle written independently of the engine (sets
of cards and the rules as the books state them, no bit masks, no incremental state), and every
finished hand against an independent count of its tricks and points.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.cards import CARDS, QUEEN_OF_SPADES, Card, Suit
from arena.engine import Game, Hand, HandResult, Phase, pick_index, settle_hand
from arena.errors import RulesError, Violation
from arena.rules import PRESETS, FirstLead, GameEnd, MoonRule, PassDirection, Rules

PLAYER_COUNTS = (3, 4, 5, 6)
OPTIONS = (
    "kitty=true",
    "first_lead=any-club",
    "first_lead=left-of-dealer",
    "penalty_on_first_trick=true",
    "queen_breaks_hearts=false",
    "must_break_hearts=false",
    "lead_hearts_with_queen=true",
    "queen_penalty=0",
    "jack_of_diamonds=-10",
    "spot_hearts=true",
    "moon=off",
    "moon=subtract",
    "moon=best",
    "sun=true",
    "no_tricks_bonus=-5",
    "pass_count=0",
    "pass_count=1",
    "moon_points=30",
)
RULE_CASES: dict[str, Rules] = {}
for _name, _base in PRESETS.items():
    for _n in PLAYER_COUNTS:
        RULE_CASES[f"{_name}/{_n}p"] = _base.replace(players=_n)
for _option in OPTIONS:
    for _n in PLAYER_COUNTS:
        RULE_CASES[f"{_option}/{_n}p"] = Rules(players=_n).with_options([_option])
for _n in (3, 5, 6):
    RULE_CASES[f"kitty-spot-sun/{_n}p"] = Rules(
        players=_n, kitty=True, spot_hearts=True, sun=True, jack_of_diamonds=-10
    )

FAST = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(min_value=0, max_value=2**63 - 1)
hand_numbers = st.integers(min_value=0, max_value=11)


# ---- the oracle ----------------------------------------------------------------------------------


def oracle_legal(hand: Hand) -> set[Card]:
    """The legal plays of the seat to move, from the rules as written and public state only."""
    rules = hand.rules
    seat = hand.to_move
    assert seat is not None
    held = set(hand.hand(seat))
    trick = hand.current_trick
    assert trick is not None
    played = [c for t in hand.tricks for c in t.cards]
    first_trick = not hand.tricks
    if trick.cards:
        follow = {c for c in held if c.suit is trick.cards[0].suit}
        options = follow or held
    elif first_trick and rules.first_lead is not FirstLead.LEFT_OF_DEALER:
        clubs = sorted(
            c for c in rules.cards_in_deck if c.suit is Suit.CLUBS and c not in hand.kitty
        )
        if rules.first_lead is FirstLead.LOWEST_CLUB:
            return {clubs[0]}
        return {c for c in held if c.suit is Suit.CLUBS}
    else:
        queen_breaks = rules.queen_breaks_hearts and rules.queen_penalty > 0
        broken = any(c.suit is Suit.HEARTS for c in played) or (
            queen_breaks and QUEEN_OF_SPADES in played
        )
        options = held
        if rules.must_break_hearts and not broken:
            others = {c for c in held if c.suit is not Suit.HEARTS}
            queen_only = others == {QUEEN_OF_SPADES} and rules.queen_penalty > 0
            if others and not (queen_only and rules.lead_hearts_with_queen):
                options = others
    if first_trick and not rules.penalty_on_first_trick:
        clean = {c for c in options if not rules.is_penalty(c)}
        if clean:
            options = clean
    return options


def oracle_points(hand: Hand, result: HandResult) -> tuple[list[int], list[int] | None]:
    """Points per seat from the tricks as recorded: (no moon or ADD/SUBTRACT as applied, the
    other moon choice for BEST), recounted from the cards."""
    rules = hand.rules
    n = rules.players
    taken: list[set[Card]] = [set() for _ in range(n)]
    won = [0] * n
    for trick in hand.tricks:
        assert trick.winner is not None
        taken[trick.winner] |= set(trick.cards)
        won[trick.winner] += 1
    taken[hand.tricks[0].winner or 0] |= set(hand.kitty)
    assert tuple(won) == result.tricks_won
    points = [sum(rules.card_points(c) for c in t) for t in taken]
    assert tuple(points) == result.taken_points
    assert result.hearts_taken == tuple(sum(c.suit is Suit.HEARTS for c in t) for t in taken)
    penalty = {c for c in rules.cards_in_deck if rules.is_penalty(c)}
    shooters = [s for s in range(n) if penalty <= taken[s]]
    bonus = [rules.no_tricks_bonus if w == 0 else 0 for w in won]
    if rules.moon is MoonRule.OFF or not shooters:
        assert result.moon is None and not result.sun and result.moon_rule is None
        return [p + b for p, b in zip(points, bonus, strict=True)], None
    (shooter,) = shooters
    assert result.moon == shooter
    sun = rules.sun and won[shooter] == rules.tricks_per_hand
    assert result.sun is sun
    value = rules.moon_value * (2 if sun else 1)
    plain = [sum(rules.card_points(c) for c in t if c not in penalty) for t in taken]
    add = [p + (0 if s == shooter else value) + bonus[s] for s, p in enumerate(plain)]
    sub = [p - (value if s == shooter else 0) + bonus[s] for s, p in enumerate(plain)]
    if rules.moon is MoonRule.ADD:
        return add, None
    if rules.moon is MoonRule.SUBTRACT:
        return sub, None
    return (add, sub) if result.moon_rule is MoonRule.ADD else (sub, add)


# ---- checks made along the way ---------------------------------------------------------------


def check_move(hand: Hand) -> None:
    """The legal plays of the seat to move: non-empty, held, following suit, as the oracle says,
    and check_play agreeing card by card."""
    seat = hand.to_move
    assert seat is not None
    legal = hand.legal_mask()
    held = hand.hand_mask(seat)
    assert legal and not legal & ~held
    assert set(hand.legal_plays()) == oracle_legal(hand)
    trick = hand.current_trick
    assert trick is not None
    assert hand.leader == trick.leader
    if trick.cards:
        follow = sum(c.bit for c in hand.hand(seat) if c.suit is trick.cards[0].suit)
        if follow:
            assert not legal & ~follow
    for card in CARDS:
        why = hand.check_play(seat, card)
        if legal & card.bit:
            assert why is None
        elif held & card.bit:
            assert why not in (None, Violation.CARD_NOT_HELD, Violation.NOT_YOUR_TURN)
        else:
            assert why is Violation.CARD_NOT_HELD
    for other in range(hand.players):
        if other != seat and hand.hand(other):
            assert hand.check_play(other, hand.hand(other)[0]) is Violation.NOT_YOUR_TURN


def check_views(hand: Hand) -> None:
    """No seat's view shows another seat's unplayed cards, except those it passed to it."""
    n = hand.players
    for seat in range(n):
        view = hand.view(seat)
        shown = set(view.hand) | set(view.legal) | set(view.passed or ()) | set(view.received or ())
        for trick in view.tricks:
            shown |= set(trick.cards)
        if view.current is not None:
            shown |= set(view.current.cards)
        hidden = {c for other in range(n) if other != seat for c in hand.hand(other)}
        hidden |= set(hand.kitty)
        if view.received is not None:  # after the exchange the seat knows where its pass went
            hidden -= set(view.passed or ())
        assert not shown & hidden, (seat, shown & hidden)
        assert view.hand == tuple(hand.hand(seat))
        assert view.cards_held == tuple(len(hand.hand(s)) for s in range(n))
        assert view.to_move == hand.to_move and view.phase is hand.phase
        if hand.to_move == seat:
            assert view.legal == tuple(hand.legal_plays())
        else:
            assert view.legal == ()


def snapshot(hand: Hand) -> tuple[Any, ...]:
    """Everything observable about a hand, to check that a copy does not share state."""
    n = hand.players
    return (
        hand.phase,
        hand.to_move,
        tuple(tuple(hand.hand(s)) for s in range(n)),
        tuple(hand.passed(s) and tuple(hand.passed(s) or ()) for s in range(n)),
        hand.tricks,
        hand.current_trick,
        hand.points_taken(),
        hand.hearts_broken,
        tuple(hand.voids(s) for s in range(n)),
        hand.legal_mask(),
    )


def random_pass(hand: Hand, rng: random.Random) -> None:
    """Every seat passes random cards; the exchange moves exactly those cards."""
    before = [set(hand.hand(s)) for s in range(hand.players)]
    chosen: dict[int, list[Card]] = {}
    for seat in hand.seats_to_pass:
        assert hand.passed_mask(seat) == hand.received_mask(seat) == 0
        chosen[seat] = rng.sample(hand.hand(seat), hand.rules.pass_count)
        assert hand.check_pass(seat, chosen[seat]) is None
        hand.pass_cards(seat, chosen[seat])
        assert hand.passed_mask(seat) == sum(c.bit for c in chosen[seat])
    assert hand.phase is Phase.PLAY
    for seat in range(hand.players):
        giver = next(g for g in range(hand.players) if hand.pass_target(g) == seat)
        assert set(hand.received(seat) or ()) == set(chosen[giver])
        assert hand.received_mask(seat) == sum(c.bit for c in chosen[giver])
        assert set(hand.hand(seat)) == (before[seat] - set(chosen[seat])) | set(chosen[giver])


def play_checked(hand: Hand, rng: random.Random) -> HandResult:
    """Play the hand out at random, checking every move, every view and the final count."""
    rules = hand.rules
    n = rules.players
    dealt = [set(hand.dealt(s)) for s in range(n)]
    assert [hand.dealt_mask(s) for s in range(n)] == [sum(c.bit for c in d) for d in dealt]
    assert set().union(*dealt) | set(hand.kitty) == set(rules.cards_in_deck)
    assert all(len(d) == rules.hand_size for d in dealt) and len(hand.kitty) == rules.kitty_size
    if hand.phase is Phase.PASS:
        check_views(hand)
        random_pass(hand, rng)
    start_hands = [set(hand.hand(s)) for s in range(n)]
    copy_at = rng.randrange(n * rules.hand_size)
    moves = 0
    while not hand.is_over:
        check_move(hand)
        check_views(hand)
        if moves == copy_at:
            before = snapshot(hand)
            other = hand.copy()
            other.playout(rng)
            assert other.is_over and snapshot(hand) == before
        seat = hand.to_move
        legal = hand.legal_plays()
        done = hand.play(rng.choice(legal), seat=seat)
        moves += 1
        assert (done is not None) == (moves % n == 0)
        if done is not None:  # the winner leads the next trick (the last one's stays leader)
            assert hand.leader == done.winner
    check_views(hand)
    # Every card played exactly once, in the right number of tricks, each won by the right seat.
    tricks = hand.tricks
    assert len(tricks) == rules.tricks_per_hand
    played = [c for t in tricks for c in t.cards]
    assert len(played) == len(set(played)) == n * rules.hand_size
    assert set(played) == set(rules.cards_in_deck) - set(hand.kitty)
    if rules.first_lead is FirstLead.LEFT_OF_DEALER:
        assert tricks[0].leader == (hand.dealer + 1) % n
    else:
        low = min(c for c in set(played) if c.suit is Suit.CLUBS)
        assert low in start_hands[tricks[0].leader]
        if rules.first_lead is FirstLead.LOWEST_CLUB:
            assert tricks[0].cards[0] == low
        else:
            assert tricks[0].cards[0].suit is Suit.CLUBS
    for k, trick in enumerate(tricks):
        assert len(trick.cards) == n and trick.number == k
        for pos, card in enumerate(trick.cards):
            assert card in start_hands[trick.seat_of(pos, n)]
        lead = trick.cards[0].suit
        top = max((c for c in trick.cards if c.suit is lead), key=lambda c: c.rank)
        assert trick.winner == trick.seat_of(trick.cards.index(top), n)
        if k:
            assert trick.leader == tricks[k - 1].winner
    result = hand.result()
    expected, alternative = oracle_points(hand, result)
    assert list(result.points) == expected
    # The points sum to what the deck holds, moved about by the moon, the sun and the bonus.
    deck_points = sum(rules.card_points(c) for c in rules.cards_in_deck)
    no_trick = sum(1 for w in result.tricks_won if w == 0) * rules.no_tricks_bonus
    if result.moon is None:
        assert sum(result.points) == deck_points + no_trick
    else:
        value = rules.moon_value * (2 if result.sun else 1)
        plain = deck_points - sum(
            rules.card_points(c) for c in rules.cards_in_deck if rules.is_penalty(c)
        )
        moved = (n - 1) * value if result.moon_rule is MoonRule.ADD else -value
        assert sum(result.points) == plain + moved + no_trick
    if alternative is not None:
        assert rules.moon is MoonRule.BEST
    return result


# ---- the properties ------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", RULE_CASES.values(), ids=RULE_CASES.keys())
@FAST
@given(seed=seeds, number=hand_numbers, play=seeds)
def test_random_hands_keep_every_rule(rules: Rules, seed: int, number: int, play: int) -> None:
    hand = Hand.deal(rules, seed, hand_number=number)
    assert hand.pass_direction is rules.pass_direction(number)
    assert hand.dealer == number % rules.players
    play_checked(hand, random.Random(play))


@pytest.mark.parametrize("rules", RULE_CASES.values(), ids=RULE_CASES.keys())
@FAST
@given(seed=seeds, number=hand_numbers, play=seeds)
def test_the_same_seed_gives_the_same_game(rules: Rules, seed: int, number: int, play: int) -> None:
    a = Hand.deal(rules, seed, hand_number=number)
    b = Hand.deal(rules, seed, hand_number=number)
    assert [a.dealt(s) for s in range(rules.players)] == [b.dealt(s) for s in range(rules.players)]
    assert a.kitty == b.kitty
    a.playout(random.Random(play))
    b.playout(random.Random(play))
    assert a.tricks == b.tricks and a.result() == b.result()
    other = Hand.deal(rules, seed ^ 1, hand_number=number)
    if rules.players * rules.hand_size > 12:  # different seeds give different deals
        assert [other.dealt(s) for s in range(rules.players)] != [
            a.dealt(s) for s in range(rules.players)
        ]


def reference_playout(hand: Hand, rng: random.Random) -> None:
    """What Hand.playout promises to do, through the checked public moves."""
    draw = rng.random
    for seat in hand.seats_to_pass:
        held = hand.hand_mask(seat)
        chosen = 0
        for _ in range(hand.rules.pass_count):
            chosen |= 1 << pick_index(held & ~chosen, draw())
        hand.pass_cards(seat, [c for c in CARDS if c.bit & chosen])
    while not hand.is_over:
        hand.play(CARDS[pick_index(hand.legal_mask(), draw())])


@pytest.mark.parametrize("rules", RULE_CASES.values(), ids=RULE_CASES.keys())
@FAST
@given(seed=seeds, number=hand_numbers, play=seeds, stop=st.integers(0, 80))
def test_playout_makes_the_moves_a_checked_driver_would(
    rules: Rules, seed: int, number: int, play: int, stop: int
) -> None:
    hand = Hand.deal(rules, seed, hand_number=number)
    rng = random.Random(play)
    if stop:  # start from the pass, or from somewhere in the play
        if hand.phase is Phase.PASS:
            reference_playout_pass(hand, rng)
        for _ in range(min(stop, rules.players * rules.hand_size) - 1):
            hand.play(CARDS[pick_index(hand.legal_mask(), rng.random())])
    fast, checked = hand.copy(), hand.copy()
    fast.playout(random.Random(play))
    reference_playout(checked, random.Random(play))
    assert fast.tricks == checked.tricks
    assert fast.result() == checked.result()
    for seat in range(rules.players):
        assert fast.view(seat) == checked.view(seat)
        assert fast.taken(seat) == checked.taken(seat)


def reference_playout_pass(hand: Hand, rng: random.Random) -> None:
    for seat in hand.seats_to_pass:
        hand.pass_cards(seat, rng.sample(hand.hand(seat), hand.rules.pass_count))


@pytest.mark.parametrize("rules", RULE_CASES.values(), ids=RULE_CASES.keys())
@FAST
@given(
    seed=seeds, number=hand_numbers, play=seeds, stop=st.integers(0, 80), viewer=st.integers(0, 5)
)
def test_a_hand_rebuilt_from_a_view_plays_on_identically(
    rules: Rules, seed: int, number: int, play: int, stop: int, viewer: int
) -> None:
    hand = Hand.deal(rules, seed, hand_number=number)
    rng = random.Random(play)
    seat = viewer % rules.players
    if hand.phase is Phase.PASS and stop % 3:
        hand.pass_cards(seat, rng.sample(hand.hand(seat), rules.pass_count))
        if stop % 3 == 2:
            reference_playout_pass(hand, rng)
    if hand.phase is Phase.PLAY:
        for _ in range(min(stop, rules.players * rules.hand_size)):
            hand.play(CARDS[pick_index(hand.legal_mask(), rng.random())])
    hands = [hand.hand(s) for s in range(rules.players)]
    rebuilt = Hand.from_view(rules, hand.view(seat), hands, kitty=hand.kitty)
    assert rebuilt.view(seat) == hand.view(seat)
    assert rebuilt.phase is hand.phase and rebuilt.to_move == hand.to_move
    assert rebuilt.legal_mask() == hand.legal_mask()
    assert rebuilt.points_taken() == hand.points_taken()
    assert rebuilt.seats_to_pass == hand.seats_to_pass
    hand.playout(random.Random(play))
    rebuilt.playout(random.Random(play))
    assert rebuilt.tricks == hand.tricks and rebuilt.result() == hand.result()


def _two_tricks_in(rules: Rules) -> Hand:
    """A hand of ``rules`` (one that holds its cards: play starts at once) two tricks in."""
    hand = Hand.deal(rules, 3, hand_number=3)
    rng = random.Random(1)
    for _ in range(8):
        hand.play(CARDS[pick_index(hand.legal_mask(), rng.random())])
    return hand


def test_a_view_that_contradicts_the_guess_is_refused() -> None:
    rules = Rules()
    hand = _two_tricks_in(rules)
    view = hand.view(0)
    hands = [hand.hand(s) for s in range(4)]
    with pytest.raises(RulesError, match="is not the viewer's hand"):
        Hand.from_view(rules, view, [hands[1], hands[0], hands[2], hands[3]])
    # A card played already, added to a guess: it was dropped without a word.
    first = hand.tricks[0].cards[0]
    extra = [hands[0], hands[1], [*hands[2], first], hands[3]]
    with pytest.raises(RulesError, match=rf"hands\[2\] holds {first}, played already"):
        Hand.from_view(rules, view, extra)
    # Give seat 1 a card of a suit it has shown it lacks, in exchange for one of seat 2's.
    voids = [s for s in range(1, 4) if hand.voids(s)]
    if voids:
        s = voids[0]
        suit = next(iter(hand.voids(s)))
        donor = next(
            (t for t in range(1, 4) if t != s and any(c.suit is suit for c in hands[t])), None
        )
        if donor is not None:
            give = next(c for c in hands[donor] if c.suit is suit)
            take = hands[s][0]
            hands[s] = [*hands[s][1:], give]
            hands[donor] = [c for c in hands[donor] if c != give] + [take]
            with pytest.raises(Exception, match="must follow"):
                Hand.from_view(rules, view, hands)


# ---- whole games ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rules",
    [r for name, r in RULE_CASES.items() if "/4p" in name or name.split("/")[0] in PRESETS],
    ids=[n for n in RULE_CASES if "/4p" in n or n.split("/")[0] in PRESETS],
)
@settings(max_examples=2, deadline=None)
@given(seed=seeds, play=seeds)
def test_whole_games_add_up(rules: Rules, seed: int, play: int) -> None:
    rules = rules.replace(target=min(rules.target, 60))
    game = Game(rules, seed)
    rng = random.Random(play)
    pool = game.pool
    balances = list(game.balances)
    while not game.is_over:
        game.hand.playout(rng)
        before = list(game.totals)
        result = game.finish_hand()
        won, pool = settle_hand(rules, result, pool)
        balances = [b + w for b, w in zip(balances, won, strict=True)]
        assert game.totals == [b + p for b, p in zip(before, result.points, strict=True)]
        assert game.balances == balances  # settle_hand's counters (none under POINTS)
        assert sum(game.balances) + game.pool == 0  # counters are only moved, never made
        assert game.pool == pool
    assert game.totals == [sum(r.points[s] for r in game.results) for s in range(rules.players)]
    top = max(game.totals)
    assert top >= rules.target if rules.game_end is GameEnd.REACH else top > rules.target
    for partial in range(1, len(game.results)):
        sums = [sum(r.points[s] for r in game.results[:partial]) for s in range(rules.players)]
        assert (
            max(sums) < rules.target
            if rules.game_end is GameEnd.REACH
            else max(sums) <= rules.target
        )
    assert min(game.placings) == 1 and len(game.winners) >= 1


# ---- any combination of options ----------------------------------------------------------------

option_values: dict[str, st.SearchStrategy[Any]] = {
    "players": st.integers(3, 6),
    "kitty": st.booleans(),
    "pass_count": st.integers(0, 4),
    "pass_cycle": st.none()
    | st.lists(st.sampled_from([d.value for d in PassDirection]), min_size=1, max_size=4),
    "first_lead": st.sampled_from([f.value for f in FirstLead]),
    "penalty_on_first_trick": st.booleans(),
    "queen_breaks_hearts": st.booleans(),
    "must_break_hearts": st.booleans(),
    "lead_hearts_with_queen": st.booleans(),
    "queen_penalty": st.sampled_from([0, 13, 25]),
    "jack_of_diamonds": st.sampled_from([0, -10]),
    "spot_hearts": st.booleans(),
    "moon": st.sampled_from([m.value for m in MoonRule]),
    "sun": st.booleans(),
    "no_tricks_bonus": st.sampled_from([0, -5]),
}


@st.composite
def any_rules(draw: st.DrawFn) -> Rules:
    """Rules from any combination of options that the rules value accepts."""
    chosen = draw(st.fixed_dictionaries({}, optional=option_values))
    try:
        return Rules.from_dict(chosen)
    except RulesError as err:
        assert err.field in Rules.__dataclass_fields__ or err.field == "preset"
        draw(st.nothing())
        raise AssertionError("unreachable") from None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=any_rules(), seed=seeds, number=hand_numbers, play=seeds)
def test_any_accepted_combination_of_options_plays_by_the_rules(
    rules: Rules, seed: int, number: int, play: int
) -> None:
    play_checked(Hand.deal(rules, seed, hand_number=number), random.Random(play))


def test_a_guess_with_a_card_short_says_what_the_seat_was_given() -> None:
    # It read "rules.players: seat 1 holds 12 cards, expected 13" for a seat given 10 cards
    # (it holds 11, and had played 2): the count of the deal rebuilt, blamed on the rules.
    rules = Rules()
    hand = _two_tricks_in(rules)
    hands = [hand.hand(s) for s in range(4)]
    short = [hands[0], hands[1][:-1], hands[2], hands[3]]
    with pytest.raises(
        RulesError,
        match=r"^hands: hands\[1\] has 10 cards, and 2 played: 12, where 4 players are "
        r"dealt 13 each \(the hands given do not fit the rules\)$",
    ):
        Hand.from_view(rules, hand.view(0), short)
