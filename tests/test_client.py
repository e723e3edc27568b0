"""The client SDK without a network: the Bot API, local play, the view, the search helpers.

Everything here runs the real rules engine; the bots are small real subclasses of Bot.
"""

from __future__ import annotations

import dataclasses
import random
import warnings
from collections.abc import Callable, Sequence

import pytest

from arena.cards import CARDS, Card, Suit, mask_of
from arena.client import (
    Bot,
    BotDefinitionWarning,
    CardPlayed,
    CardsDealt,
    CardsReceived,
    DecisionKind,
    DecisionView,
    Event,
    GameEnded,
    GameStarted,
    HandEnded,
    HandStarted,
    TrickWon,
    highest,
    lowest,
    play_local,
    playout,
    sample_world,
    view_of,
    voids_shown,
)
from arena.engine import Hand, Phase
from arena.errors import CardParseError, ConfigError, IllegalMoveError, Violation
from arena.referee import wire
from arena.rules import FirstLead, PassDirection, Rules
from arena.table import Termination


class Recorder(Bot):
    """Plays like the base class and records every event and view it is given."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.views: list[DecisionView] = []

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        self.views.append(view)
        return super().choose_pass(view)

    def choose_play(self, view: DecisionView) -> Card:
        self.views.append(view)
        return super().choose_play(view)

    def on_game_start(self, event: GameStarted) -> None:
        self.events.append(event)

    def on_hand_start(self, event: HandStarted) -> None:
        self.events.append(event)

    def on_cards_dealt(self, event: CardsDealt) -> None:
        self.events.append(event)

    def on_cards_received(self, event: CardsReceived) -> None:
        self.events.append(event)

    def on_card_played(self, event: CardPlayed) -> None:
        self.events.append(event)

    def on_trick(self, event: TrickWon) -> None:
        self.events.append(event)

    def on_hand_end(self, event: HandEnded) -> None:
        self.events.append(event)

    def on_game_end(self, event: GameEnded) -> None:
        self.events.append(event)


class RandomLegal(Bot):
    """Random legal choices from a seeded generator (for reaching varied positions)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return self.rng.sample(view.hand, view.pass_count)

    def choose_play(self, view: DecisionView) -> Card:
        return self.rng.choice(view.legal)


# ---- the Bot base class and play_local ------------------------------------------------------


def test_a_bot_that_overrides_nothing_plays_a_whole_game_legally() -> None:
    result = play_local([Bot(), Bot(), Bot(), Bot()], seed=3)
    assert max(result.totals) >= Rules().target
    assert len(result.hands) >= 2
    assert tuple(map(sum, zip(*result.hand_points, strict=True))) == result.totals
    assert sorted(result.placings)[0] == 1
    assert result.names == ("Bot", "Bot-2", "Bot-3", "Bot-4")


def test_base_class_defaults_are_the_lowest_legal_card_and_the_highest_cards() -> None:
    hand = Hand.deal(Rules(), seed=11, hand_number=0)
    view = view_of(hand, 0)
    assert view.kind is DecisionKind.PASS
    passed = Bot().choose_pass(view)
    ranks = sorted((c.rank for c in view.hand), reverse=True)
    assert sorted((c.rank for c in passed), reverse=True) == ranks[: view.pass_count]
    for seat in range(4):
        hand.pass_cards(seat, Bot().choose_pass(view_of(hand, seat)))
    mover = hand.to_move
    assert mover is not None
    play_view = view_of(hand, mover)
    assert Bot().choose_play(play_view) == lowest(play_view.legal)


def test_local_play_is_deterministic_and_follows_the_deal_of_the_seed() -> None:
    first = play_local([RandomLegal(1), RandomLegal(2), RandomLegal(3)], seed=5, hands=4)
    again = play_local([RandomLegal(1), RandomLegal(2), RandomLegal(3)], seed=5, hands=4)
    assert first == again
    other = play_local([RandomLegal(1), RandomLegal(2), RandomLegal(3)], seed=6, hands=4)
    assert other.hand_points != first.hand_points
    assert first.rules.players == 3


def test_a_local_game_whose_totals_fall_stops_at_the_rules_hand_limit() -> None:
    # Six seats, no queen, the jack of diamonds and a negative no-tricks bonus: the totals fall,
    # and a game to the target would never end without the limit.
    rules = Rules(players=6, queen_penalty=0, jack_of_diamonds=-10, no_tricks_bonus=-5)
    result = play_local([RandomLegal(s) for s in range(6)], rules=rules, seed=2)
    assert len(result.hands) == rules.max_hands == 100
    assert max(result.totals) < rules.target


def test_hands_limits_the_game_and_validates() -> None:
    assert len(play_local([Bot()] * 4, seed=1, hands=2).hands) == 2
    with pytest.raises(ConfigError, match="hands must be"):
        play_local([Bot()] * 4, hands=0)
    with pytest.raises(ConfigError, match="3 bots for a 4-player game"):
        play_local([Bot()] * 3, rules=Rules())
    with pytest.raises(
        ConfigError, match=r"rules must be a Rules, e.g. Rules\(\) or preset\('omnibus'\)"
    ):
        play_local([Bot()] * 4, rules="omnibus")  # type: ignore[arg-type]
    # A class where an instance belongs: said so, not an AttributeError from the first decision.
    with pytest.raises(
        ConfigError, match=r"bots\[0\] is the class Bot, not a Bot: give an instance, Bot\(\)"
    ):
        play_local([Bot] * 4)  # type: ignore[list-item]
    with pytest.raises(ConfigError, match=r"bots\[3\] is 'lowcard', not a Bot$"):
        play_local([Bot(), Bot(), Bot(), "lowcard"])  # type: ignore[list-item]
    # hands=2.5 played 3 hands, "2" failed on a comparison, move_ms="x" mid-game in a view.
    for name, bad in (("hands", 2.5), ("hands", "2"), ("move_ms", "x"), ("bank_ms", -5)):
        with pytest.raises(ConfigError, match=rf"^{name} must be a whole number .*, got {bad!r}$"):
            play_local([Bot()] * 4, **{name: bad})  # type: ignore[arg-type]
    for bots in (None, Bot(), "abcd"):
        with pytest.raises(ConfigError, match=r"^bots must be a list of Bot instances"):
            play_local(bots)  # type: ignore[arg-type]


def test_one_bot_object_with_hooks_at_several_seats_is_warned_of() -> None:
    # play_local([b] * 4): the one object got every seat's events, and a bot that keeps state
    # by them (an audit's: 52 tricks and 4 hand ends for one hand) played on, unwarned.
    class Counting(Bot):
        def choose_play(self, view: DecisionView) -> Card:
            return view.legal[0]

        def on_trick(self, event: TrickWon) -> None:
            pass

    shared = Counting()
    with pytest.warns(UserWarning, match=r"^one Counting object plays seats 0, 2, and its hooks"):
        play_local([shared, Counting(), shared, Counting()], seed=1, hands=1)
    # One object per seat, or one that keeps no state by events (Bot itself): not a word.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        play_local([Counting() for _ in range(4)], seed=1, hands=1)
        play_local([Bot()] * 4, seed=1, hands=1)
    # Seeds no table takes played a game no referee would deal.
    for seed in (-1, 2**63, True, "7"):
        with pytest.raises(ConfigError, match=r"^seed must be a whole number from 0 to "):
            play_local([Bot()] * 4, seed=seed)  # type: ignore[arg-type]


class Cheater(Bot):
    """Plays a card it does not hold."""

    def choose_play(self, view: DecisionView) -> Card:
        held = mask_of(view.hand)
        return next(c for c in CARDS if not held & c.bit)


def test_an_illegal_answer_stops_local_play_naming_the_bot() -> None:
    with pytest.raises(IllegalMoveError) as caught:
        play_local([Bot(), Cheater(), Bot(), Bot()], seed=2, names=["a", "cheat", "c", "d"])
    assert caught.value.violation is Violation.CARD_NOT_HELD
    assert caught.value.seat == 1
    assert any("'cheat' in seat 1" in note for note in caught.value.__notes__)


class Returns(Bot):
    """Answers every decision with the same wrong value (an author's slip, e.g. no return)."""

    def __init__(self, play: object = None, pass_: object = None) -> None:
        self.play, self.pass_ = play, pass_

    def choose_play(self, view: DecisionView) -> Card:
        return self.play  # type: ignore[return-value]  # wrong on purpose

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return self.pass_ if self.pass_ is not None else super().choose_pass(view)  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("bot", "says"),
    [
        (Returns(play=None), "choose_play returned None, not a Card"),
        (Returns(play=0), "choose_play returned an int (0), not a Card"),
        (Returns(pass_=Card.parse("2C")), "choose_pass returned a Card (2C), not a list of cards"),
        (Returns(pass_="2C 3C 4C"), "choose_pass returned a str ('2C 3C 4C'), not a list of cards"),
        (Returns(pass_=[None] * 3), "choose_pass returned a list holding None, not cards"),
    ],
)
def test_a_wrong_type_of_answer_stops_local_play_saying_what_came(bot: Bot, says: str) -> None:
    with pytest.raises(CardParseError) as caught:
        play_local([Bot(), bot, Bot(), Bot()], seed=2, names=["a", "slip", "c", "d"])
    assert str(caught.value) == says
    assert caught.value.__notes__ == ["answered by bot 'slip' in seat 1, hand 0"]


class Spells(Bot):
    """Answers like the base class, but with each card as text written by ``spell`` (in its
    plays and passes, or only in the ``only`` decision)."""

    def __init__(self, spell: Callable[[str], str], only: str | None = None) -> None:
        self.spell = spell
        self.only = only
        self.sent: list[str] = []

    def _write(self, card: Card, decision: str) -> str:
        text = self.spell(str(card)) if self.only in (None, decision) else str(card)
        self.sent.append(text)
        return text

    def choose_play(self, view: DecisionView) -> Card:
        return self._write(super().choose_play(view), "play")  # type: ignore[return-value]  # text on purpose

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return [self._write(c, "pass") for c in super().choose_pass(view)]  # type: ignore[misc]  # text on purpose


def _ten_as_10(code: str) -> str:
    return "10" + code[1] if code[0] == "T" else code


@pytest.mark.parametrize(
    "spell",
    [str.lower, _ten_as_10, lambda c: f" {c[0].lower()}{c[1]}\t\r\n"],
    ids=["lower", "ten", "padded"],
)
def test_local_play_takes_every_spelling_the_referee_takes(spell: Callable[[str], str]) -> None:
    bot = Spells(spell)
    played = play_local([Bot(), bot, Bot(), Bot()], seed=2, hands=4)
    # The same cards, spelled otherwise, and each spelling one the referee takes.
    assert played.hand_points == play_local([Bot()] * 4, seed=2, hands=4).hand_points
    assert all(wire.card_spelled(text) is not None for text in bot.sent)
    assert any(text not in wire.CARD_OF for text in bot.sent)


@pytest.mark.parametrize(
    ("spell", "decision"),
    [
        (lambda c: "\xa0" + c, "pass"),  # a no-break space: Card.parse took any Unicode space
        (lambda c: c + "\v", "pass"),
        (lambda c: c + "\u3000", "play"),
        (lambda c: c.lower().replace("s", "\u017f"), "pass"),  # "ſ", which Card.parse upper-cased
        (lambda c: "\u2003" + c, "play"),
    ],
    ids=["nbsp-pass", "vtab-pass", "ideographic-space-play", "long-s-pass", "em-space-play"],
)
def test_local_play_refuses_what_the_referee_refuses_in_its_words(
    spell: Callable[[str], str], decision: str
) -> None:
    bot = Spells(spell, only=decision)
    with pytest.raises(CardParseError) as caught:
        play_local([Bot(), bot, Bot(), Bot()], seed=2, hands=4)
    bad = next(text for text in bot.sent if wire.card_spelled(text) is None)
    if decision == "pass":
        said = f"the pass names something not a card: cannot parse card {bad!r}: {wire.CARD_FORM}"
    else:
        said = f"{bad!r} is not a card: {wire.CARD_FORM}"
    assert str(caught.value) == said
    assert caught.value.__notes__ == ["answered by bot 'Spells' in seat 1, hand 0"]


def test_events_arrive_in_the_referees_order_and_add_up() -> None:
    bots = [Recorder() for _ in range(4)]
    result = play_local(bots, seed=9, hands=2)
    for seat, bot in enumerate(bots):
        events = bot.events
        assert isinstance(events[0], GameStarted) and events[0].seat == seat
        assert isinstance(events[-1], GameEnded)
        assert events[-1].termination is Termination.NORMAL
        assert events[-1].totals == result.totals
        assert events[-1].message == "2 hands played"  # the referee's words ("2 hand(s) ...")
        hands_started = [e for e in events if isinstance(e, HandStarted)]
        assert [h.hand_number for h in hands_started] == [0, 1]
        played = [e for e in events if isinstance(e, CardPlayed)]
        assert len(played) == 2 * 52
        assert len({(e.hand_number, e.card) for e in played}) == 2 * 52
        tricks = [e for e in events if isinstance(e, TrickWon)]
        assert len(tricks) == 26
        ended = [e for e in events if isinstance(e, HandEnded)]
        for h in ended:
            taken = [0] * 4
            for t in tricks:
                if t.hand_number == h.hand_number:
                    assert t.trick.winner is not None
                    taken[t.trick.winner] += t.points
            assert tuple(taken) == h.points_taken
        dealt = [e for e in events if isinstance(e, CardsDealt)]
        received = [e for e in events if isinstance(e, CardsReceived)]
        assert len(dealt) == 2 and all(len(d.cards) == 13 for d in dealt)
        assert len(received) == 2 and all(len(r.cards) == 3 for r in received)
        # Hand 0 passes left: seat s gives to s+1 and gets from s-1.
        assert received[0].passed_to == (seat + 1) % 4
        assert received[0].from_seat == (seat - 1) % 4


def test_every_view_agrees_with_what_the_bot_has_been_told() -> None:
    bots = [Recorder() for _ in range(4)]
    play_local(bots, seed=21, hands=3, decide_forced_moves=True)
    deck = mask_of(Rules().cards_in_deck)
    for seat, bot in enumerate(bots):
        assert bot.views
        for view in bot.views:
            assert view.seat == seat
            hand = mask_of(view.hand)
            assert mask_of(view.legal) & ~hand == 0
            assert mask_of(view.unseen) & hand == 0
            assert mask_of(view.unseen) | hand | mask_of(view.played) == deck
            assert sum(view.cards_in_hand) == 52 - len(view.played)
            assert view.cards_in_hand[seat] == len(view.hand)
            assert view.voids == voids_shown(
                (*view.tricks, *([view.trick] if view.trick else [])), 4
            )
            if view.kind is DecisionKind.PLAY:
                assert view.trick is not None
                assert view.trick.seat_of(len(view.trick.cards), 4) == seat
                assert view.leading == (not view.trick.cards)
            else:
                assert view.pass_count == 3 and view.trick is None and not view.passed


def test_winning_and_trick_points_read_the_current_trick() -> None:
    hands = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    ]
    hand = Hand.from_hands(Rules(penalty_on_first_trick=True), hands)
    hand.play("2C")
    hand.play("2D")
    hand.play("AH")
    view = view_of(hand, 3)
    assert view.winning() == (0, Card.parse("2C"))
    assert view.trick_points() == 1
    assert view.last_to_play and not view.leading
    assert view.lead_suit is Suit.CLUBS
    assert view.voids[1] == {Suit.CLUBS} and view.voids[2] == {Suit.CLUBS}
    assert highest(view.legal) == Card.parse("AS") and lowest(view.legal) == Card.parse("2S")


def test_time_left_counts_down_from_the_move_time_and_the_bank_apart() -> None:
    hand = Hand.deal(Rules(), seed=1)
    assert view_of(hand, 0).time_left() is None
    assert view_of(hand, 0).time_left(include_bank=True) is None
    view = view_of(hand, 0, move_ms=5000, bank_ms=20_000)
    assert (view.move_ms, view.bank_ms, view.deadline_ms) == (5000, 20_000, 25_000)
    left, hard = view.time_left(), view.time_left(include_bank=True)
    assert left is not None and 0 < left <= 5
    assert hard is not None and 20 < hard <= 25
    late = dataclasses.replace(view, received_at=view.received_at - 30)
    assert late.time_left() == 0.0 and late.time_left(include_bank=True) == 0.0  # not negative


@pytest.mark.parametrize("hands", [1, 3, None])
def test_the_hand_limit_is_told_at_the_start_and_in_every_view(hands: int | None) -> None:
    bot = Recorder()
    result = play_local([bot, Bot(), Bot(), Bot()], seed=4, hands=hands)
    started = [e for e in bot.events if isinstance(e, GameStarted)]
    told = hands or Rules().max_hands  # a game to the target: the rules' limit, 100 hands
    assert [e.max_hands for e in started] == [told]
    assert {v.max_hands for v in bot.views} == {told}
    last = [v.hand_number for v in bot.views if v.last_hand]
    assert last == ([len(result.hands) - 1] * len(last) if hands else [])
    assert last or hands is None


def test_local_play_shows_the_clocks_a_referee_shows() -> None:
    bot = Recorder()
    play_local([bot, Bot(), Bot(), Bot()], seed=1, hands=1, move_ms=1000, bank_ms=10_000)
    assert {(v.move_ms, v.bank_ms, v.deadline_ms, v.game_id) for v in bot.views} == {
        (1000, 10_000, 11_000, "local")
    }


# ---- sample_world and playout ---------------------------------------------------------------


def _positions(rules: Rules, seeds: range) -> list[tuple[Hand, DecisionView]]:
    """Engine positions at random points of random hands, with the view of the seat to move."""
    out = []
    for seed in seeds:
        rng = random.Random(seed)
        hand = Hand.deal(rules, seed, hand_number=seed % 4)
        for seat in hand.seats_to_pass:
            hand.pass_cards(seat, rng.sample(hand.hand(seat), rules.pass_count))
        stop = rng.randrange(rules.hand_size * rules.players)
        for _ in range(stop):
            hand.play(rng.choice(hand.legal_plays()))
        mover = hand.to_move
        assert mover is not None
        out.append((hand, view_of(hand, mover)))
    return out


@pytest.mark.parametrize(
    "rules",
    [
        Rules(),
        Rules(players=3),
        Rules(players=3, kitty=True),
        Rules(players=5, kitty=True),
        Rules(players=5, kitty=True, first_lead=FirstLead.ANY_CLUB),
        Rules(players=6, first_lead=FirstLead.ANY_CLUB),
        Rules(players=5),
        Rules(lead_hearts_with_queen=True, first_lead=FirstLead.LEFT_OF_DEALER),
    ],
    ids=[
        "standard",
        "three",
        "three-kitty",
        "five-kitty",
        "five-kitty-any-club",
        "six-any-club",
        "five",
        "queen-leads-hearts-left-of-dealer",
    ],
)
def test_sampled_worlds_are_consistent_with_the_view(rules: Rules) -> None:
    rng = random.Random(7)
    for truth, view in _positions(rules, range(60)):
        me = view.seat
        for _ in range(3):
            world = sample_world(view, rng)
            assert world.phase is Phase.PLAY
            assert world.to_move == me
            assert world.hand(me) == list(view.hand)
            mine = world.view(me)
            assert mine.tricks == view.tricks
            assert mine.current == view.trick
            assert mine.legal == view.legal
            assert mine.hearts_broken == view.hearts_broken
            assert mine.voids == view.voids
            for seat in range(rules.players):
                held = world.hand(seat)
                assert len(held) == view.cards_in_hand[seat]
                assert not {c.suit for c in held} & view.voids[seat]
            target = view.pass_to
            if target != me:
                unplayed = set(view.passed) - set(view.played)
                assert unplayed <= set(world.hand(target))
            assert mine.points_taken == view.points_taken  # the kitty's points included
            # The world hides nothing that the truth does not also have somewhere.
            hidden = {c for s in range(rules.players) if s != me for c in world.hand(s)}
            assert hidden <= set(view.unseen)
            _replay_checked(world)
        assert truth.hand(me) == list(view.hand)


def _replay_checked(world: Hand) -> None:
    """Play the world's cards again from its holdings, each checked by the rules: a world in
    which a seat held a card that would have made one of its plays illegal raises."""
    again = Hand(
        world.rules,
        [world.dealt(s) for s in range(world.rules.players)],
        dealer=world.dealer,
        pass_direction=PassDirection.HOLD,
        kitty=world.kitty,
    )
    for trick in (*world.tricks, *((world.current_trick,) if world.current_trick else ())):
        for card in trick.cards:
            again.play(card)


def _position_of(rules: Rules, dealer: int, now: list[str], tricks: list[tuple[int, str]]) -> Hand:
    """The hand whose seats hold ``now`` after ``tricks`` (leader, cards in play order),
    every card checked."""
    played: list[list[str]] = [[] for _ in now]
    for leader, cards in tricks:
        for i, card in enumerate(cards.split()):
            played[(leader + i) % len(now)].append(card)
    hand = Hand.from_hands(
        rules, [" ".join([held, *played[s]]) for s, held in enumerate(now)], dealer=dealer
    )
    for _, cards in tricks:
        for card in cards.split():
            hand.play(card)
    return hand


def test_sampled_worlds_meet_tight_voids() -> None:
    # Seat 0 (void in three suits) must hold exactly 7H 9H KH: the deal tried 50 greedy guesses,
    # then dealt ignoring the voids, in 230 worlds of 1,000.
    hand = _position_of(
        Rules(players=5),
        4,
        ["7H 9H KH", "4C 6C 9C", "7S 5C", "5D 8D JD", "3D TC QC"],
        [
            (1, "3C KC 8C 7C 7D"),
            (2, "9S 6S 4H 8S 4S"),
            (2, "TS 3S QH 2H 5S"),
            (2, "QS KS KD 8H 2S"),
            (3, "QD 6D 6H 9D AD"),
            (2, "AS AH TD TH 4D"),
            (2, "JH AC 5H 3H JC"),
            (2, "JS"),
        ],
    )
    view = view_of(hand, 3)
    for seed in range(200):
        world = sample_world(view, random.Random(seed))
        assert [str(c) for c in world.hand(0)] == ["7H", "9H", "KH"]
        _replay_checked(world)


def test_sampled_worlds_keep_what_the_plays_show_beyond_voids() -> None:
    # Seat 1 led a heart before hearts were broken, which it may only when it holds nothing
    # else: every world gave it other suits.
    seat1 = "AC 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH"
    seat0 = "2C 3C 4C 5C 2D 3D 4D 5D 2S 3S 4S 5S 6S"
    rest = [c for c in CARDS if str(c) not in f"{seat0} {seat1}".split()]
    hand = Hand.from_hands(Rules(), [seat0, seat1, rest[:13], rest[13:]], dealer=3)  # no pass
    for card in ("2C", "AC", rest[0], rest[13], "2H"):  # seat 1 wins the first trick, leads 2H
        hand.play(card)
    view = view_of(hand, 2)
    for seed in range(100):
        world = sample_world(view, random.Random(seed))
        assert {c.suit for c in world.hand(1)} == {Suit.HEARTS}
        _replay_checked(world)


def test_sampled_worlds_vary_and_repeat_with_the_seed() -> None:
    _, view = _positions(Rules(), range(3, 4))[0]
    worlds = [sample_world(view, random.Random(s)) for s in range(6)]
    assert len({tuple(tuple(w.hand(s)) for s in range(4)) for w in worlds}) > 1
    again = sample_world(view, random.Random(0))
    assert [again.hand(s) for s in range(4)] == [worlds[0].hand(s) for s in range(4)]


def test_a_pass_view_samples_a_whole_deal() -> None:
    hand = Hand.deal(Rules(), seed=4, hand_number=0)
    view = view_of(hand, 2)
    world = sample_world(view, random.Random(1))
    assert world.phase is Phase.PASS
    assert world.hand(2) == list(view.hand)
    assert all(len(world.hand(s)) == 13 for s in range(4))


def test_playout_finishes_any_position_with_every_point_scored() -> None:
    for hand, _ in _positions(Rules(), range(30)):
        result = playout(hand.copy())
        points = sum(result.taken_points)
        assert points == 26
        assert sum(result.tricks_won) == 13


class Misnamed(Bot):
    """Its author guessed the method names."""

    def play(self, view: DecisionView) -> Card:
        return highest(view.legal)

    def pass_cards(self, view: DecisionView) -> list[Card]:
        return list(view.hand[:3])

    def on_trick_won(self, event: TrickWon) -> None:
        """Never called: the hook is on_trick."""

    def helper(self) -> int:
        """A name like no Bot method's: not a slip."""
        return 0


def test_misnamed_methods_are_warned_of_naming_the_method_meant() -> None:
    with pytest.warns(BotDefinitionWarning) as caught:
        play_local([Misnamed(), Bot(), Bot(), Bot()], seed=1, hands=1)
    said = [str(w.message) for w in caught]
    assert said == [
        "bot class Misnamed defines on_trick_won(), which the SDK never calls: did you mean "
        "on_trick()? (Bot's own on_trick runs instead)",
        "bot class Misnamed defines pass_cards(), which the SDK never calls: did you mean "
        "choose_pass()? (Bot's own choose_pass runs instead)",
        "bot class Misnamed defines play(), which the SDK never calls: did you mean "
        "choose_play()? (Bot's own choose_play runs instead)",
        "bot class Misnamed overrides neither choose_play nor choose_pass: it plays the base "
        "class's defaults (the lowest legal card; passes its highest cards)",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # told once per class, and never of Bot or a good bot
        play_local([Misnamed(), Bot(), Recorder(), RandomLegal(1)], seed=1, hands=1)


def test_lowest_and_highest_refuse_no_cards_and_card_text_naming_themselves() -> None:
    # min()'s "arg is an empty sequence", and "'str' object has no attribute 'rank'" for text,
    # named neither helper.
    for helper in (lowest, highest):
        name = helper.__name__
        nothings: tuple[Sequence[Card], ...] = ([], ())
        for nothing in nothings:
            with pytest.raises(ConfigError, match=rf"^{name}\(cards\) of no cards"):
                helper(nothing)
        with pytest.raises(ConfigError, match=rf"^{name}\(cards\) takes a list of cards"):
            helper("AS KS")
    cards = [Card.parse("AS"), Card.parse("2C"), Card.parse("2D")]
    assert (lowest(cards), highest(cards)) == (Card.parse("2C"), Card.parse("AS"))
    # Codes too, as the engine's moves take them ("'str' object has no attribute 'rank'").
    codes: list[Card | str] = ["AS", "2C", Card.parse("2D")]
    assert (lowest(codes), highest(codes)) == (Card.parse("2C"), Card.parse("AS"))
    with pytest.raises(CardParseError, match="cannot parse card 'XX'"):
        highest(["AS", "XX"])


def test_a_local_game_to_the_target_ends_with_the_referees_words() -> None:
    bots = [Recorder() for _ in range(4)]
    result = play_local(bots, seed=9, rules=Rules(target=30))
    (ended,) = [e for e in bots[0].events if isinstance(e, GameEnded)]
    assert ended.message == f"{len(result.hands)} hands played to 30"
    # A game of at most 5 hands that a total ends first says so, as the referee does.
    bots = [Recorder() for _ in range(4)]
    play_local(bots, seed=9, rules=Rules(target=1), hands=5)
    (ended,) = [e for e in bots[0].events if isinstance(e, GameEnded)]
    assert ended.message == "1 hand played to 1"
    bots = [Recorder() for _ in range(4)]
    play_local(bots, seed=9, hands=2)
    (ended,) = [e for e in bots[0].events if isinstance(e, GameEnded)]
    assert ended.message == "2 hands played"
