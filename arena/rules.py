"""The rules of a game: one immutable value, every option a named field.

``Rules()`` is the standard four-player game of DESIGN.md. Variants are named presets
(:data:`PRESETS`, :func:`preset`) or any combination of fields; :meth:`Rules.__post_init__`
refuses an out-of-range or contradictory combination with a :class:`~arena.errors.RulesError`
that names the field. :meth:`Rules.with_options` applies ``NAME=VALUE`` strings, as the CLI's
``--rule`` flag does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any, Final, TypedDict, Unpack

from arena.cards import (
    CARDS,
    JACK_OF_DIAMONDS,
    QUEEN_OF_SPADES,
    RANKS_PER_SUIT,
    Card,
    Rank,
    Suit,
    mask_of,
    parse_cards,
)
from arena.errors import CardParseError, ConfigError, RulesError

__all__ = [
    "DEFAULT_PASS_CYCLES",
    "DEFAULT_REMOVED_CARDS",
    "MAX_PLAYERS",
    "MIN_HAND_LIMIT",
    "MIN_PLAYERS",
    "PRESETS",
    "STANDARD_PLAYERS",
    "FirstLead",
    "GameEnd",
    "MoonRule",
    "PassDirection",
    "RuleChanges",
    "Rules",
    "Settling",
    "preset",
]

MIN_PLAYERS = 3
MAX_PLAYERS = 6
STANDARD_PLAYERS = 4
STANDARD_PASS_COUNT = 3
QUEEN_PENALTY = 13
"""Points for taking the queen of spades in the standard game."""
OMNIBUS_JACK_BONUS = -10
"""Points for taking the jack of diamonds in Omnibus Hearts."""
SPOT_QUEEN_PENALTY = 25
"""Points for the queen of spades under spot hearts, where she counts."""
STANDARD_TARGET = 100
SPOT_TARGET = 500
MIN_HAND_LIMIT = 100
"""The fewest hands :attr:`Rules.max_hands` allows a game to the target (for small targets)."""
HEARTS_MASK = ((1 << RANKS_PER_SUIT) - 1) << (RANKS_PER_SUIT * Suit.HEARTS)
"""Every heart, as a card mask."""


class PassDirection(Enum):
    """Where the cards go in a hand's pass; the value is its name in the rules ("left", "across").

    :meth:`offset` gives the receiving seat for a table size."""

    HOLD = "hold"
    LEFT = "left"
    RIGHT = "right"
    ACROSS = "across"
    LEFT_2 = "left2"
    RIGHT_2 = "right2"

    def offset(self, players: int) -> int:
        """How many seats to the left the receiver sits, at a table of ``players``."""
        # By the plain value (``_value_``): the engine asks once per pass, and enum properties
        # and members looked up on the class cost more than the arithmetic.
        value = self._value_
        if not MIN_PLAYERS <= players <= MAX_PLAYERS:
            seats = f"{MIN_PLAYERS} to {MAX_PLAYERS}"
            raise RulesError("players", f"a table has {seats} players, not {players!r}")
        if (value == "across" and players % 2) or (value[-1] == "2" and players < 5):
            # As Rules refuses such a cycle: across at 3 answered 1 (left), left2 at 4 across.
            raise RulesError("pass_cycle", f"'{value}' does not exist at a table of {players}")
        if value in _SEATS_LEFT:
            return _SEATS_LEFT[value]
        if value in _SEATS_RIGHT:
            return players - _SEATS_RIGHT[value]
        return players // 2


_SEATS_LEFT = {"hold": 0, "left": 1, "left2": 2}
_SEATS_RIGHT = {"right": 1, "right2": 2}


MAX_POINTS: Final = 1_000_000
"""The largest point value or target a rule may give (either sign)."""
MAX_TOTAL: Final = 2**31 - 1
"""The largest game total the protocol carries, either sign (``game_totals`` are int32)."""

DEFAULT_PASS_CYCLES: Mapping[int, tuple[PassDirection, ...]] = {
    3: (PassDirection.LEFT, PassDirection.RIGHT, PassDirection.HOLD),
    4: (PassDirection.LEFT, PassDirection.RIGHT, PassDirection.ACROSS, PassDirection.HOLD),
    5: (
        PassDirection.LEFT,
        PassDirection.RIGHT,
        PassDirection.LEFT_2,
        PassDirection.RIGHT_2,
        PassDirection.HOLD,
    ),
    6: (PassDirection.LEFT, PassDirection.RIGHT, PassDirection.ACROSS, PassDirection.HOLD),
}
"""The pass direction cycle for each table size when ``Rules.pass_cycle`` is not given."""

DEFAULT_REMOVED_CARDS: Mapping[int, tuple[Card, ...]] = {
    3: tuple(parse_cards("2D")),
    4: (),
    5: tuple(parse_cards("2C 2D")),
    6: tuple(parse_cards("2C 3C 2D 3D")),
}
"""Cards taken out so the deck divides evenly: low clubs and diamonds, never a penalty card, in
index order. (Foster's Hoyle takes out deuces instead, the two of hearts among them at six
players; give ``removed_cards`` for that.) Without the two of clubs, the lowest club leads."""


class FirstLead(Enum):
    """Who leads the first trick of a hand, and with what."""

    LOWEST_CLUB = "lowest-club"
    """The holder of the lowest club in play leads it (the 2 of clubs in the standard deck)."""
    ANY_CLUB = "any-club"
    """The holder of the lowest club in play leads, but may lead any club."""
    LEFT_OF_DEALER = "left-of-dealer"
    """The player left of the dealer leads anything (subject to the breaking rules)."""


class MoonRule(Enum):
    """What happens when one player takes every penalty card (shoots the moon). The moon
    replaces only those cards' points: the jack of diamonds and the no-tricks bonus still count
    for whoever earned them, the shooter included."""

    OFF = "off"
    """No moon: the shooter keeps the points taken."""
    ADD = "add"
    """The shooter scores 0 and every other player the moon value (the default)."""
    SUBTRACT = "subtract"
    """The shooter scores minus the moon value; the others score 0."""
    BEST = "best"
    """Automatically whichever of ADD and SUBTRACT leaves the shooter better placed."""


class GameEnd(Enum):
    """When the game stops, measured against ``Rules.target``."""

    REACH = "reach"
    """At the end of the hand where someone's total reaches the target (>=)."""
    PASS = "pass"
    """At the end of the hand where someone's total passes the target (>)."""


class Settling(Enum):
    """How the deals are settled between the players."""

    POINTS = "points"
    """Running totals to a target; the lowest total wins (the default)."""
    SWEEPSTAKES = "sweepstakes"
    """One counter per heart into a pool, won by the only clean player or split by two clean
    players (an odd counter stays); otherwise, or when one player took every heart (two clean
    players at a three-player table), the pool is a jack, carried to the next deal."""
    HOWELL = "howell"
    """Each pays players-minus-one counters per heart taken and takes one per heart not taken."""
    SPOT = "spot"
    """The hand's lowest scorer collects from each other player the difference (spot hearts)."""


def _one_card(card: Card | str) -> Card:
    """A card given as a Card or as its code ("QS"), as the engine's moves take them."""
    if isinstance(card, Card):
        return card
    if isinstance(card, str):
        return Card.parse(card)
    raise CardParseError(f"expected a card (a Card, or a code such as 'QS'), got {card!r:.40}")


def _text_list(text: str, name: str) -> list[str]:
    """The entries of a list given as text, separated by commas or spaces.

    An empty entry (``left,,right``, a leading or trailing comma) is refused rather than
    skipped: it is likely a name left out, and the list without it is a different game.
    """
    entries = [entry.strip() for entry in text.split(",")]
    if len(entries) > 1 and not all(entries):
        raise RulesError(
            name, f"{text!r} has an empty entry (a comma with nothing before or after it)"
        )
    return [word for entry in entries for word in entry.split()]


def _enum_field(enum: type[Enum], value: Any, name: str) -> Any:
    if isinstance(value, enum):
        return value
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(m.value) for m in enum)
        raise RulesError(name, f"unknown value {value!r}: expected one of {choices}") from None


class RuleChanges(TypedDict, total=False):
    """The fields :meth:`Rules.replace` takes, typed as :class:`Rules` types them (so that a type
    checker catches a misspelt or mistyped rule; a test keeps the two alike)."""

    players: int
    removed_cards: tuple[Card, ...] | None
    kitty: bool
    pass_count: int
    pass_cycle: tuple[PassDirection, ...] | None
    first_lead: FirstLead
    penalty_on_first_trick: bool
    queen_breaks_hearts: bool
    must_break_hearts: bool
    lead_hearts_with_queen: bool
    queen_penalty: int
    jack_of_diamonds: int
    spot_hearts: bool
    moon: MoonRule
    moon_points: int | None
    sun: bool
    no_tricks_bonus: int
    target: int
    game_end: GameEnd
    settling: Settling


@dataclass(frozen=True)
class Rules:
    """Every option of a game of Hearts. The defaults are the standard four-player game."""

    players: int = STANDARD_PLAYERS
    """Seats at the table, 3 to 6."""
    removed_cards: tuple[Card, ...] | None = None
    """Cards taken out of the deck so it divides evenly; None means the documented default for the
    table size (:data:`DEFAULT_REMOVED_CARDS`). With ``kitty`` it must be None or empty."""
    kitty: bool = False
    """Instead of removing cards, deal the odd ones face down as a kitty that goes, with its points,
    to the winner of the first trick."""
    pass_count: int = STANDARD_PASS_COUNT
    """Cards each player passes; 0 means no passing at all."""
    pass_cycle: tuple[PassDirection, ...] | None = None
    """Pass directions hand by hand, repeating; None means :data:`DEFAULT_PASS_CYCLES`."""
    first_lead: FirstLead = FirstLead.LOWEST_CLUB
    """Who leads the first trick, and with what."""
    penalty_on_first_trick: bool = False
    """Whether a heart or the queen of spades may be played on the first trick when not forced."""
    queen_breaks_hearts: bool = True
    """Whether playing the queen of spades breaks hearts."""
    must_break_hearts: bool = True
    """Whether hearts may be led only once broken (unless the leader holds nothing else)."""
    lead_hearts_with_queen: bool = False
    """Whether a leader holding only hearts and the queen of spades may lead a heart before hearts
    are broken (if False, such a leader must lead the queen)."""
    queen_penalty: int = QUEEN_PENALTY
    """Points for the queen of spades; 0 in the older game where only hearts count (and then she is
    a plain spade: no penalty card, not needed for the moon, and she does not break hearts)."""
    jack_of_diamonds: int = 0
    """Points for the jack of diamonds (Omnibus: -10). Not needed to shoot the moon."""
    spot_hearts: bool = False
    """Hearts count their face value (2-10, J 11, Q 12, K 13, A 14) instead of 1 each."""
    moon: MoonRule = MoonRule.ADD
    """The moon rule."""
    moon_points: int | None = None
    """Points the moon is worth; None means every penalty point in play (26 in the standard game,
    104 plus the queen under spot hearts)."""
    sun: bool = False
    """Shooting the sun: taking every trick scores the moon twice over."""
    no_tricks_bonus: int = 0
    """Points (usually negative, e.g. -5) for a player who takes no trick in a hand."""
    target: int = STANDARD_TARGET
    """The score that ends the game."""
    game_end: GameEnd = GameEnd.REACH
    """Whether the game ends when a total reaches or passes the target."""
    settling: Settling = Settling.POINTS
    """How the deals are settled between the players."""

    def __post_init__(self) -> None:
        # Accept plain strings and lists for convenience (from TOML and --rule), but store the
        # canonical types so that equal rules compare and hash equal.
        for name, enum in (
            ("first_lead", FirstLead),
            ("moon", MoonRule),
            ("game_end", GameEnd),
            ("settling", Settling),
        ):
            object.__setattr__(self, name, _enum_field(enum, getattr(self, name), name))
        if self.pass_cycle is not None:
            given: Any = self.pass_cycle
            if isinstance(given, str):
                given = _text_list(given, "pass_cycle")
            try:
                cycle = tuple(_enum_field(PassDirection, d, "pass_cycle") for d in given)
            except TypeError:  # not a sequence at all
                raise RulesError(
                    "pass_cycle", f"expected a list of directions, got {self.pass_cycle!r}"
                ) from None
            object.__setattr__(self, "pass_cycle", cycle)
        if self.removed_cards is not None:
            listed: Any = self.removed_cards
            if isinstance(listed, str):
                listed = _text_list(listed, "removed_cards")
            try:
                removed = tuple(c if isinstance(c, Card) else Card.parse(c) for c in listed)
            except CardParseError as e:
                raise RulesError("removed_cards", str(e)) from None
            except TypeError:  # not a sequence at all
                raise RulesError(
                    "removed_cards", f"expected a list of cards, got {self.removed_cards!r}"
                ) from None
            object.__setattr__(self, "removed_cards", tuple(sorted(removed)))
        self._validate()
        # A value equal to the table size's default is kept as None, the default, so that rules
        # that play the same games compare and hash equal (and a run given moon_points=26 is the
        # run given nothing: the database holds one run, not "another").
        if self.pass_cycle == DEFAULT_PASS_CYCLES[self.players]:
            object.__setattr__(self, "pass_cycle", None)
        if self.removed_cards is not None and self.removed_cards == (
            () if self.kitty else DEFAULT_REMOVED_CARDS[self.players]
        ):
            object.__setattr__(self, "removed_cards", None)
        if self.moon_points is not None and self.moon_points == self._penalty_total():
            object.__setattr__(self, "moon_points", None)

    def _validate(self) -> None:
        for name in (
            "players",
            "pass_count",
            "queen_penalty",
            "jack_of_diamonds",
            "no_tricks_bonus",
            "target",
        ):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise RulesError(name, f"must be a whole number, got {v!r}")
        for name in (
            "kitty",
            "penalty_on_first_trick",
            "queen_breaks_hearts",
            "must_break_hearts",
            "lead_hearts_with_queen",
            "spot_hearts",
            "sun",
        ):
            if not isinstance(getattr(self, name), bool):
                raise RulesError(name, f"must be true or false, got {getattr(self, name)!r}")
        if not MIN_PLAYERS <= self.players <= MAX_PLAYERS:
            raise RulesError(
                "players", f"must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {self.players}"
            )
        if self.queen_penalty < 0:
            raise RulesError(
                "queen_penalty", f"must be 0 (only hearts count) or more, got {self.queen_penalty}"
            )
        removed = self.removed_cards
        if self.kitty and removed:
            raise RulesError(
                "removed_cards", "cannot remove cards when the odd cards form a kitty (kitty=true)"
            )
        if removed is not None and len(set(removed)) != len(removed):
            raise RulesError("removed_cards", "lists a card twice")
        in_play = self.deck_size - (len(removed) if removed is not None and not self.kitty else 0)
        if removed is not None and not self.kitty and in_play % self.players:
            short = in_play % self.players
            fewer = (
                f" or {self.players - short} fewer" if self.players - short <= len(removed) else ""
            )
            raise RulesError(
                "removed_cards",
                f"leaves {in_play} cards, which do not divide among {self.players} players: "
                f"remove {short} more{fewer}",
            )
        if in_play < self.players:
            raise RulesError("removed_cards", f"leaves {in_play} cards for {self.players} players")
        gone = set(self.removed)
        if not any(c.suit is Suit.HEARTS for c in CARDS if c not in gone):
            raise RulesError("removed_cards", "removes every heart")
        if QUEEN_OF_SPADES in gone and self.queen_penalty:
            raise RulesError(
                "removed_cards",
                f"removes the queen of spades, who scores {self.queen_penalty} (queen_penalty): "
                "keep her, or give queen_penalty=0",
            )
        if JACK_OF_DIAMONDS in gone and self.jack_of_diamonds:
            raise RulesError(
                "removed_cards",
                f"removes the jack of diamonds, who scores {self.jack_of_diamonds} "
                "(jack_of_diamonds): keep him, or give jack_of_diamonds=0",
            )
        if self.pass_count < 0:
            raise RulesError("pass_count", f"must be 0 (no passing) or more, got {self.pass_count}")
        if self.pass_count >= self.hand_size:
            raise RulesError(
                "pass_count",
                f"must be less than the {self.hand_size} cards each player holds",
            )
        if self.pass_cycle is not None:
            if not self.pass_cycle:
                raise RulesError("pass_cycle", "must name at least one direction (or use hold)")
            for d in self.pass_cycle:
                if d is PassDirection.ACROSS and self.players % 2:
                    raise RulesError(
                        "pass_cycle", f"'across' does not exist with {self.players} players"
                    )
                if d in (PassDirection.LEFT_2, PassDirection.RIGHT_2) and self.players < 5:
                    raise RulesError(
                        "pass_cycle",
                        f"'{d.value}' needs 5 or more players (it would be "
                        f"{'across' if self.players == 4 else 'an existing direction'})",
                    )
        if self.target <= 0:
            raise RulesError("target", f"must be positive, got {self.target}")
        for name in (
            "queen_penalty",
            "jack_of_diamonds",
            "no_tricks_bonus",
            "target",
            "moon_points",
        ):
            v = getattr(self, name)
            if isinstance(v, int) and abs(v) > MAX_POINTS:
                # Points travel as 32-bit numbers; a bound far below that keeps any hand's in
                # (and _check_total_range a whole game's totals).
                # The fields that may be negative say both ends; the others only the top one
                # (their lower bound was checked above, in its own words).
                signed = name in ("jack_of_diamonds", "no_tricks_bonus")
                bound = f"within -{MAX_POINTS} to" if signed else "at most"
                raise RulesError(name, f"must be {bound} {MAX_POINTS}, got {v}")
        if self.moon_points is not None:
            if (
                not isinstance(self.moon_points, int)
                or isinstance(self.moon_points, bool)
                or self.moon_points <= 0
            ):
                raise RulesError(
                    "moon_points", f"must be a positive whole number, got {self.moon_points!r}"
                )
            if self.moon is MoonRule.OFF:
                raise RulesError("moon_points", "gives the moon a value, but moon is off")
        if self.settling is Settling.SPOT and not self.spot_hearts:
            raise RulesError("settling", "spot settling needs spot_hearts=true")
        if self.sun and self.moon is MoonRule.OFF:
            raise RulesError("sun", "shooting the sun needs a moon rule (moon is off)")
        if self.first_lead is not FirstLead.LEFT_OF_DEALER and not any(
            c.suit is Suit.CLUBS for c in self.cards_in_deck
        ):
            raise RulesError(
                "first_lead",
                "the club lead needs clubs in play: keep a club in the deck, or give "
                "first_lead=left-of-dealer",
            )
        self._check_total_range()

    def _check_total_range(self) -> None:
        """Refuse rules whose totals could fall below what the protocol carries in a game.

        Each value is within MAX_POINTS, but a game lasts up to ``max_hands`` hands: with a
        large negative value and a large target, a total passed -2**31 after some thousands
        of hands and the referee failed the table with a traceback (``Value out of range``).
        Only the negative side needs a bound: a total at or above the target ends the game.
        """
        moon_loss = 0
        if self.moon in (MoonRule.SUBTRACT, MoonRule.BEST):  # the shooter loses the moon
            moon_loss = self.moon_value * (2 if self.sun else 1)
        jack_loss = max(0, -self.jack_of_diamonds)
        # A seat that took no trick took neither the jack nor the moon: the larger loss counts.
        loss = max(jack_loss + moon_loss, max(0, -self.no_tricks_bonus))
        if loss * self.max_hands <= MAX_TOTAL:
            return
        most = MAX_TOTAL // loss
        causes = [
            f"{name}={value}"
            for name, value in (
                ("jack_of_diamonds", self.jack_of_diamonds),
                ("no_tricks_bonus", self.no_tricks_bonus),
            )
            if value < 0
        ]
        if moon_loss:
            causes.append(f"moon={self.moon.value} worth {moon_loss}")
        fix = (
            f"give a target of at most {most}, or smaller negative points"
            if most >= MIN_HAND_LIMIT
            else f"give negative points that come to at most {MAX_TOTAL // MIN_HAND_LIMIT} a hand"
        )
        raise RulesError(
            "target",
            f"a game to {self.target} lasts up to {self.max_hands} hands and a seat may lose "
            f"{loss} points a hand ({', '.join(causes)}), so its total could fall below "
            f"-{MAX_TOTAL + 1}, the lowest the protocol carries: {fix}",
        )

    # ---- derived values -------------------------------------------------------------------
    # Cached on first use (the fields are frozen, and the engine reads these on every deal).

    @property
    def deck_size(self) -> int:
        """Cards in the full deck before any are removed."""
        return len(CARDS)

    @cached_property
    def removed(self) -> tuple[Card, ...]:
        """The cards actually removed (the default for the table size when not given)."""
        if self.kitty:
            return ()
        if self.removed_cards is not None:
            return self.removed_cards
        return DEFAULT_REMOVED_CARDS[self.players]

    @cached_property
    def cards_in_deck(self) -> tuple[Card, ...]:
        """The cards dealt (hands and kitty), in index order."""
        gone = set(self.removed)
        return tuple(c for c in CARDS if c not in gone)

    @cached_property
    def deck_mask(self) -> int:
        """The cards dealt (hands and kitty), as a card mask."""
        return mask_of(self.cards_in_deck)

    @cached_property
    def penalty_mask(self) -> int:
        """The penalty cards of the full deck (hearts, and the queen of spades if she scores)."""
        return HEARTS_MASK | (QUEEN_OF_SPADES.bit if self.queen_penalty > 0 else 0)

    @cached_property
    def breaking_mask(self) -> int:
        """The cards whose play breaks hearts (hearts, and the queen when she scores and breaks)."""
        if self.queen_breaks_hearts and self.queen_penalty > 0:
            return HEARTS_MASK | QUEEN_OF_SPADES.bit
        return HEARTS_MASK

    @cached_property
    def moon_mask(self) -> int:
        """The cards a player must take to shoot the moon: every penalty card in play."""
        return self.penalty_mask & self.deck_mask

    @cached_property
    def hand_size(self) -> int:
        """Cards dealt to each player."""
        return (self.deck_size - len(self.removed)) // self.players

    @cached_property
    def kitty_size(self) -> int:
        """Cards in the kitty (0 without ``kitty``)."""
        return (self.deck_size - len(self.removed)) % self.players if self.kitty else 0

    @property
    def max_hands(self) -> int:
        """The most hands a game to the target plays: ``max(100, target)``.

        A game that has played this many hands ends even if no total has reached the target:
        under some rules the totals do not rise (six players with a negative no-tricks bonus and
        the jack of diamonds, no queen), and such a game would otherwise never end. Under rules
        whose leader gains a point a hand or more, as every usual rule set's does, the limit is
        never reached.
        """
        return max(MIN_HAND_LIMIT, self.target)

    @property
    def tricks_per_hand(self) -> int:
        """Tricks in one hand (one per card in a hand)."""
        return self.hand_size

    @property
    def passing(self) -> bool:
        """Whether any cards are passed at all."""
        return self.pass_count > 0 and any(d is not PassDirection.HOLD for d in self.cycle)

    @cached_property
    def cycle(self) -> tuple[PassDirection, ...]:
        """The pass direction cycle in force."""
        return self.pass_cycle if self.pass_cycle is not None else DEFAULT_PASS_CYCLES[self.players]

    def pass_direction(self, hand_number: int) -> PassDirection:
        """The pass direction for the hand numbered ``hand_number`` (0 is the first)."""
        if isinstance(hand_number, bool) or not isinstance(hand_number, int) or hand_number < 0:
            # "1" failed in a modulo as string formatting; -1 answered the cycle's last.
            raise ConfigError(f"hand_number counts from 0, got {hand_number!r}")
        if self.pass_count == 0:
            return PassDirection.HOLD
        return self.cycle[hand_number % len(self.cycle)]

    def card_points(self, card: Card | str) -> int:
        """The points a card scores for the player who takes it (a Card, or its code)."""
        card = _one_card(card)
        if card.suit is Suit.HEARTS:
            return card.rank.pips if self.spot_hearts else 1
        if card.suit is Suit.SPADES and card.rank is Rank.QUEEN:
            return self.queen_penalty
        if card.suit is Suit.DIAMONDS and card.rank is Rank.JACK:
            return self.jack_of_diamonds
        return 0

    def is_penalty(self, card: Card | str) -> bool:
        """Whether a card (a Card, or its code) is a penalty card: a heart, or the queen of
        spades where she scores."""
        return bool(_one_card(card).bit & self.penalty_mask)

    @cached_property
    def moon_value(self) -> int:
        """What the moon is worth (the sum of every penalty card in play, unless set)."""
        if self.moon_points is not None:
            return self.moon_points
        return self._penalty_total()

    def _penalty_total(self) -> int:
        return sum(self.card_points(c) for c in self.cards_in_deck if self.is_penalty(c))

    # ---- construction helpers ------------------------------------------------------------

    def replace(self, **changes: Unpack[RuleChanges]) -> Rules:
        """A copy with some fields changed (validated like any other).

        A value equal to its default is kept as the default (None), so ``pass_cycle``,
        ``removed_cards`` and ``moon_points`` given at their default follow the copy's own
        default: ``Rules(moon_points=26).replace(spot_hearts=True)`` is worth 117 for the moon;
        give ``moon_points=26`` in the same call to keep 26.
        """
        for name in changes:
            if name not in _FIELD_TYPES:  # else a bare TypeError from the dataclass's __init__
                raise RulesError(
                    name, f"unknown rule; known rules: {', '.join(sorted(_FIELD_TYPES))}"
                )
        return dataclasses.replace(self, **changes)

    def with_options(self, options: Mapping[str, Any] | Sequence[str] | str) -> Rules:
        """A copy with options applied.

        ``options`` are ``NAME=VALUE`` strings (the CLI's ``--rule``; one such string alone is
        one option), or a mapping of names to strings or plain TOML values (true, 3,
        ["left", "hold"]).
        """
        items: list[tuple[str, str]]
        if options is None:  # iterated below, it said only "'NoneType' object is not iterable"
            raise RulesError("?", "expected options: NAME=VALUE texts or a mapping, got None")
        if isinstance(options, Mapping):
            items = [(str(k).replace("-", "_"), _option_text(v)) for k, v in options.items()]
        else:
            items = []
            if not isinstance(options, str | Sequence):  # else "'int' object is not iterable"
                raise RulesError(
                    "?", f"expected options: NAME=VALUE texts or a mapping, got {options!r}"
                )
            # A lone string is one option, not a sequence of one-letter ones.
            for opt in [options] if isinstance(options, str) else options:
                if not isinstance(opt, str):
                    raise RulesError("?", f"expected NAME=VALUE text, got {opt!r}")
                name, sep, value = opt.partition("=")
                if not sep or not name.strip():
                    raise RulesError(name.strip() or "?", f"expected NAME=VALUE, got {opt!r}")
                items.append((name.strip().replace("-", "_"), value.strip()))
        changes = {name: _parse_option(name, value) for name, value in items}
        return self.replace(**changes)

    def to_dict(self) -> dict[str, Any]:
        """The rules as plain JSON-ready data (enums by value, cards as codes)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Enum):
                v = v.value
            elif isinstance(v, tuple):
                v = [x.value if isinstance(x, Enum) else str(x) for x in v]
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rules:
        """Rules from :meth:`to_dict` output (or any mapping of field names to plain values)."""
        if not isinstance(data, Mapping):
            raise RulesError("?", f"expected a mapping of rule names to values, got {data!r:.80}")
        known = {f.name for f in dataclasses.fields(cls)}
        for name in data:
            if name not in known:
                raise RulesError(name, f"unknown rule; known rules: {', '.join(sorted(known))}")
        return cls(**dict(data))


def _field_kind(annotation: object) -> str:
    """How an option's text is read, from the field's annotation (a string: see the imports)."""
    text = str(annotation)
    if text in ("int", "bool"):
        return text
    if text == "int | None":
        return "optint"
    if text.startswith("tuple["):
        return "list"
    return "str"  # an enum: the field converts its value itself


_FIELD_TYPES: dict[str, str] = {f.name: _field_kind(f.type) for f in dataclasses.fields(Rules)}
"""Every option by name, and how its text is read; derived so a new field needs no entry here."""


def _option_text(value: Any) -> str:
    """An option's value as the text ``NAME=VALUE`` would carry (TOML booleans and lists too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return " ".join(_option_text(v) for v in value)
    if isinstance(value, Enum):  # MoonRule.BEST: str() is "MoonRule.BEST", the option is "best"
        return str(value.value)
    return str(value)


def _parse_option(name: str, value: str) -> Any:
    kind = _FIELD_TYPES.get(name)
    if kind is None:
        raise RulesError(name, f"unknown rule; known rules: {', '.join(sorted(_FIELD_TYPES))}")
    v = value.strip()
    if kind == "int" or (kind == "optint" and v.lower() not in ("", "none", "default")):
        try:
            return int(v)
        except ValueError:
            raise RulesError(name, f"must be a whole number, got {value!r}") from None
    if kind == "optint":
        return None
    if kind == "bool":
        low = v.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise RulesError(name, f"must be true or false, got {value!r}")
    if kind == "list":
        if v.lower() in ("none", "default"):
            return None
        return tuple(_text_list(v, name))
    return v


# Foster's Hearts (1895), the game the settling methods were written for: no pass, the player left
# of the dealer leads anything, no breaking rule, hearts may go on any trick, only hearts count and
# there is no moon.
_FOSTER = Rules(
    pass_count=0,
    first_lead=FirstLead.LEFT_OF_DEALER,
    penalty_on_first_trick=True,
    must_break_hearts=False,
    queen_penalty=0,
    queen_breaks_hearts=False,
    moon=MoonRule.OFF,
)

PRESETS: Mapping[str, Rules] = {
    "standard": Rules(),
    "omnibus": Rules(jack_of_diamonds=OMNIBUS_JACK_BONUS),
    # Spot hands are worth about five times a standard hand, and so is the target.
    "spot": Rules(spot_hearts=True, queen_penalty=SPOT_QUEEN_PENALTY, target=SPOT_TARGET),
    "spot-settling": Rules(
        spot_hearts=True,
        queen_penalty=SPOT_QUEEN_PENALTY,
        target=SPOT_TARGET,
        settling=Settling.SPOT,
    ),
    "black-lady": Rules(penalty_on_first_trick=True),
    "old": _FOSTER,
    "sweepstakes": _FOSTER.replace(settling=Settling.SWEEPSTAKES),
    "howell": _FOSTER.replace(settling=Settling.HOWELL),
}
"""Named rule sets for the common variants."""


def rules_example(given: object) -> str:
    """How to make a :class:`Rules` from what was given instead, for an error's "e.g. ...".

    A preset's name gets ``preset(name)``; anything else a plain example: ``preset(...)`` of a
    dict, a number or any other text told the user to call something that refuses it.
    """
    if isinstance(given, str) and given in PRESETS:
        return f"Rules() or preset({given!r})"
    if isinstance(given, str) and "=" in given:  # an option's text, "moon=best"
        return f"Rules().with_options([{given!r}])"
    if isinstance(given, Mapping):
        return "Rules() or Rules.from_dict(mapping)"
    return "Rules() or preset('omnibus')"


def preset(name: str) -> Rules:
    """The named preset (see :data:`PRESETS`)."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name, a list
        raise RulesError(
            "preset", f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}"
        ) from None
