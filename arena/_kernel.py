"""The rules engine's inner loops, over plain ints and lists (private: use :mod:`arena.engine`).

A seeded deal and a random playout spend their time here. This module knows nothing of hands,
rules or cards as objects: :class:`arena.engine.Hand` passes masks, lists and flags in and keeps
the meaning of every rule. A set of cards is an ``int`` bit mask over ``Card.index``
(``suit * 13 + rank``), as everywhere in the engine.

setup.py compiles this module with mypyc when it can (random hands then run 1.5 to 2 times as
fast: ``scripts/bench_engine.py --pure``) and writes into the compiled copy the digest of the
sources it compiled. On import, the compiled module compares that digest with the sources beside
it; if they differ (an edit in an editable install, a pull since the build) it runs this file's
Python source instead, so that a stale build never stands in for the code on disk.
``HEARTS_ARENA_PURE_ENGINE=1`` asks for the Python source even when the build is current (and,
at install, skips the build). Only private functions over plain data are compiled: every public
class and function of the engine stays the Python source's, with its docstrings, signatures and
behaviour.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Sequence
from math import floor

from arena import _compiled
from arena.cards import QUEEN_OF_SPADES, RANKS_PER_SUIT, STANDARD_DECK_SIZE, Suit

SUITS = 4
SUIT_MASK = tuple(((1 << RANKS_PER_SUIT) - 1) << (RANKS_PER_SUIT * s) for s in range(SUITS))
"""Every card of each suit, as a mask."""
CLUBS = SUIT_MASK[Suit.CLUBS]
HEARTS = SUIT_MASK[Suit.HEARTS]
NOT_HEARTS = ~HEARTS
SUIT_OF = tuple(i // RANKS_PER_SUIT for i in range(STANDARD_DECK_SIZE))
"""The suit of each card index."""
BITS = [1 << i for i in range(STANDARD_DECK_SIZE)]
"""The one-card mask of each card index. A list, not a tuple: ``map(BITS.__getitem__, ...)``
calls a list's plain method, which costs less than a tuple's slot wrapper. Never mutated."""
FOLLOWERS = {
    n: tuple(tuple((s + k) % n for k in range(1, n)) for s in range(n)) for n in range(1, 8)
}
"""The seats that follow a lead from each seat, in playing order, by table size."""
NEVER = -1
"""A mask no hand equals (used to switch a comparison off)."""

# The opening lead restriction in force (only until the first card of the hand is played).
OPEN_FREE = 0
OPEN_LOWEST_CLUB = 1
OPEN_ANY_CLUB = 2

_HEARTS_SUIT = int(Suit.HEARTS)
_SPADES_SUIT = int(Suit.SPADES)
_NON_HEART_SUITS = (int(Suit.CLUBS), int(Suit.DIAMONDS), int(Suit.SPADES))
_QS_INDEX = QUEEN_OF_SPADES.index


# ---- masks to lists of indexes ------------------------------------------------------------------
# A suit's 13 bits split 7 + 6, and a mask's 52 bits split into bytes, each part looked up in a
# table of the card indexes it holds: a set of cards becomes a list of indexes in a few steps
# instead of one step per card (one 8192-entry table per suit would cost megabytes).


def _index_table(first: int, width: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(first + r for r in range(width) if m >> r & 1) for m in range(1 << width))


_LOW_WIDTH = 7
_HIGH_WIDTH = RANKS_PER_SUIT - _LOW_WIDTH
_LOW = (1 << _LOW_WIDTH) - 1
_HIGH = (1 << _HIGH_WIDTH) - 1
_C_LOW, _D_LOW, _H_LOW, _S_LOW = [_index_table(RANKS_PER_SUIT * s, _LOW_WIDTH) for s in range(4)]
_C_HIGH, _D_HIGH, _H_HIGH, _S_HIGH = [
    _index_table(RANKS_PER_SUIT * s + _LOW_WIDTH, _HIGH_WIDTH) for s in range(4)
]
_BYTE = 8
_MASK_BYTES = 7
"""Bytes of a mask that :func:`indexes` reads: the standard deck's 52 cards fit in 7."""
_B0, _B1, _B2, _B3, _B4, _B5, _B6 = [_index_table(_BYTE * j, _BYTE) for j in range(_MASK_BYTES)]
INDEXABLE = 1 << (_BYTE * _MASK_BYTES)
"""The masks :func:`indexes` reads are below this."""


def indexes(m: int) -> list[int]:
    """The card indexes of a mask in ``range(INDEXABLE)``, lowest first."""
    b0, b1, b2, b3, b4, b5, b6 = m.to_bytes(_MASK_BYTES, "little")
    return [*_B0[b0], *_B1[b1], *_B2[b2], *_B3[b3], *_B4[b4], *_B5[b5], *_B6[b6]]


def suit_lists(masks: Sequence[int]) -> list[list[list[int]]]:
    """Per suit, per seat, the card indexes of that suit in each mask, lowest first."""
    return [
        [[*_C_LOW[m & _LOW], *_C_HIGH[m >> 7 & _HIGH]] for m in masks],
        [[*_D_LOW[m >> 13 & _LOW], *_D_HIGH[m >> 20 & _HIGH]] for m in masks],
        [[*_H_LOW[m >> 26 & _LOW], *_H_HIGH[m >> 33 & _HIGH]] for m in masks],
        [[*_S_LOW[m >> 39 & _LOW], *_S_HIGH[m >> 46 & _HIGH]] for m in masks],
    ]


def pick(mask: int, draw: float) -> int:
    """The card of ``mask`` at position ``int(draw * count)`` in index order (``pick_index``)."""
    for _ in range(floor(draw * mask.bit_count())):
        mask &= mask - 1
    return (mask & -mask).bit_length() - 1


# ---- the deal -----------------------------------------------------------------------------------


def deal_positions(n: int, seed: int, hand_number: int) -> list[int]:
    """The positions 0..n-1 of a deck of ``n`` cards in the order fixed by the seed and number.

    The positions are sorted by 64-bit keys from SHAKE-256: only hashing and sorting, so the
    order is the same on every machine and Python version. A tie between two keys (chance about
    2**-53 per deal) falls back to deck order, which is still deterministic.
    """
    digest = hashlib.shake_256(f"hearts-arena/deal/{seed}/{hand_number}".encode()).digest(8 * n)
    keys_format = _KEY_FORMATS.get(n) or _key_format(n)
    # A list, not a tuple: a list's __getitem__ is a plain method, a tuple's a slower wrapper.
    keys = list(keys_format.unpack(digest))
    return sorted(range(n), key=keys.__getitem__)


_KEY_FORMATS: dict[int, struct.Struct] = {}


def _key_format(n: int) -> struct.Struct:
    """How to read ``n`` 64-bit keys from a digest (compiled once per deck size)."""
    found = _KEY_FORMATS[n] = struct.Struct(f">{n}Q")
    return found


def deal_masks(
    bits: list[int], seed: int, hand_number: int, players: int, size: int
) -> tuple[list[int], int]:
    """Each seat's cards and the kitty, dealt from the deck whose card masks are ``bits``.

    Seat 0 gets the first ``size`` cards of :func:`deal_positions`' order, seat 1 the next, and
    so on; what is left is the kitty.
    """
    order = deal_positions(len(bits), seed, hand_number)
    get = bits.__getitem__
    masks = [sum(map(get, order[s * size : (s + 1) * size])) for s in range(players)]
    return masks, sum(map(get, order[players * size :]))


# ---- a random playout ---------------------------------------------------------------------------


def random_passes(
    hands: list[int], passed: list[int | None], count: int, draw: Callable[[], float]
) -> None:
    """Choose ``count`` uniformly random cards for every seat whose pass is still None."""
    for seat, done in enumerate(passed):
        if done is None:
            # The cards left to choose from, in index order: the k-th is pick_index's.
            cards = indexes(hands[seat])
            chosen = 0
            for _ in range(count):
                chosen |= 1 << cards.pop(floor(draw() * len(cards)))
            passed[seat] = chosen


def play_tricks(
    hands: list[int],
    history: list[tuple[int, Sequence[int], int]],
    taken: list[int],
    tricks_won: list[int],
    voids: list[int],
    leader: int,
    tricks_left: int,
    opening: int,
    lowest_club: int,
    restrict: int,
    lead_free: bool,
    queen_lead: int,
    breakers: int,
    kitty: int,
    draw: Callable[[], float],
) -> tuple[int, bool, bool]:
    """Play every trick left, from a lead, with uniformly random legal cards.

    The arguments are :class:`~arena.engine.Hand`'s state, named as its fields; ``kitty`` is
    what the next trick's winner takes besides its cards (0 after the first trick). Extends
    ``history``, ``taken``, ``tricks_won`` and ``voids`` in place and leaves ``hands`` as it
    found them (the caller empties them). Returns the last winner, whether a heart may now be
    led, and whether a breaking card was played.

    Each card is chosen from one ``draw()`` as ``pick_index`` chooses it (the card at position
    ``floor(draw * count)`` in index order among the legal ones), so that a driver calling
    ``legal_mask`` and ``play_index`` makes exactly the same moves. floor() is int() for a draw
    in [0, 1), and cheaper.
    """
    # One trick per turn of the loop, over local variables, and each seat's cards as one sorted
    # list of indexes per suit, so that a random card of a suit is one list.pop. The masks stay
    # as they were: they are exact through the first trick (nobody has played yet when they are
    # read), the only trick that reads them. Hearts break between tricks here (only a lead asks
    # whether they are broken).
    by_suit = suit_lists(hands)
    holdings = list(zip(*by_suit, strict=True))  # per seat, the same four lists
    followers = FOLLOWERS[len(hands)]
    suit_of = SUIT_OF
    bits = BITS
    broken = False
    may_lead_queen = queen_lead != NEVER
    left = tricks_left  # cards each seat holds at the lead
    while left:
        held = holdings[leader]
        if opening or restrict:
            # The first trick, with its opening lead or its ban on penalty cards: the rules in
            # full, on the mask.
            mask = hands[leader]
            if opening:
                options = 1 << lowest_club if opening == OPEN_LOWEST_CLUB else mask & CLUBS
                opening = OPEN_FREE
            elif lead_free:
                options = mask
            else:
                non_hearts = mask & NOT_HEARTS
                options = non_hearts if non_hearts and non_hearts != queen_lead else mask
            if restrict and options & ~restrict:
                options &= ~restrict
            best = pick(options, draw())
            held[suit_of[best]].remove(best)
        elif lead_free:
            k = floor(draw() * left)
            for cards_of_suit in held:
                count = len(cards_of_suit)
                if k < count:
                    best = cards_of_suit.pop(k)
                    break
                k -= count
        else:
            # Hearts wait to be broken unless the leader holds nothing else (or, if the rules
            # allow it, nothing else but the queen of spades).
            others = left - len(held[_HEARTS_SUIT])
            if others and not (others == 1 and may_lead_queen and _QS_INDEX in held[_SPADES_SUIT]):
                k = floor(draw() * others)
                for s in _NON_HEART_SUITS:
                    cards_of_suit = held[s]
                    count = len(cards_of_suit)
                    if k < count:
                        best = cards_of_suit.pop(k)
                        break
                    k -= count
            else:
                k = floor(draw() * left)
                for cards_of_suit in held:
                    count = len(cards_of_suit)
                    if k < count:
                        best = cards_of_suit.pop(k)
                        break
                    k -= count
        suit = suit_of[best]
        column = by_suit[suit]
        # Nonzero only on a first trick led in a suit that holds a banned penalty card.
        guard = restrict & SUIT_MASK[suit]
        winner = leader
        cards = [best]
        for seat in followers[leader]:
            suited = column[seat]
            if suited and not guard:
                card = suited.pop(floor(draw() * len(suited)))
                if card > best:
                    best = card
                    winner = seat
            elif restrict:
                mask = hands[seat]
                options = mask & SUIT_MASK[suit]
                if not options:
                    options = mask
                    voids[seat] |= 1 << suit
                if options & ~restrict:
                    options &= ~restrict
                card = pick(options, draw())
                holdings[seat][suit_of[card]].remove(card)
                if card > best and suit_of[card] == suit:
                    best = card
                    winner = seat
            else:
                voids[seat] |= 1 << suit
                k = floor(draw() * left)
                for cards_of_suit in holdings[seat]:
                    count = len(cards_of_suit)
                    if k < count:
                        card = cards_of_suit.pop(k)
                        break
                    k -= count
            cards.append(card)
        got = 0
        for card in cards:
            got |= bits[card]
        if got & breakers:
            lead_free = broken = True
        taken[winner] |= got | kitty
        tricks_won[winner] += 1
        history.append((leader, cards, winner))
        kitty = restrict = 0
        leader = winner
        left -= 1
    return leader, lead_free, broken


# ---- the compiled build ------------------------------------------------------------------------

KERNEL_SOURCES = ("_kernel.py", "cards.py", "errors.py", "_compiled.py")
"""The files of the ``arena`` package a compiled build is made from (and checked against)."""

PURE_ENGINE_VARIABLE = _compiled.PURE_VARIABLE
"""The environment variable that, set to 1, asks for the Python source (and, at install, skips
the build)."""


def sources_digest(folder: str) -> str:
    """The SHA-256 of the kernel's sources in ``folder`` (setup.py computes the same)."""
    return _compiled.sources_digest(folder, KERNEL_SOURCES)


_BUILT_FROM = ""
"""The digest of the sources a compiled build was made from (setup.py sets it; empty here)."""
# COMPILED: whether this process runs the mypyc-compiled build of this module; BUILD: which runs,
# in words (for benchmarks and bug reports). A stale build runs the source instead (the guard).
COMPILED, BUILD = _compiled.guard(globals(), _BUILT_FROM, KERNEL_SOURCES)
