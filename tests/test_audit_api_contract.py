"""The public Python API as a contract, from an audit by a program that used only the README.

Errors cross a process pool; a game record's reader refuses values of another type, naming the
field; Card.parse reads a card by the referee's rule; the fallback player and the engine's seeds
refuse what makes no sense with the library's own errors.
"""

from __future__ import annotations

import json
import pickle
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import grpc
import pytest
from test_server_support import play_record

from arena import Hand, IllegalMoveError, Rules
from arena.cards import Card, parse_cards
from arena.client import play_local
from arena.client.bot import Bot
from arena.client.remote import Refused
from arena.engine import Game, deal_order
from arena.errors import (
    CardParseError,
    ConfigError,
    DealError,
    RulesError,
    SeatError,
    Violation,
)
from arena.referee import fallback_pass, fallback_play
from arena.table import GameRecord


def _illegal_play_in_a_worker() -> None:
    """Play the queen of spades while the cards are being passed (in a pool's worker)."""
    Hand.deal(Rules(), 1).play("QS")


def test_an_illegal_move_in_a_process_pool_worker_comes_back_as_itself() -> None:
    # The error could not be unpickled (its constructor takes the seat, cards and rule), and the
    # pool broke: "A process in the process pool was terminated abruptly".
    with ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_illegal_play_in_a_worker)
        with pytest.raises(IllegalMoveError) as raised:
            future.result(timeout=60)
        assert pool.submit(sum, [1, 2]).result(timeout=60) == 3  # the pool still works
    error = raised.value
    assert (error.seat, error.cards, error.violation) == (
        0,
        (Card.parse("QS"),),
        Violation.WRONG_PHASE,
    )
    assert str(error).startswith("seat 0 may not play QS: it is not the time")


@pytest.mark.parametrize(
    "error",
    [
        RulesError("target", "must be at least 1"),
        DealError("hands", "52 cards expected"),
        IllegalMoveError(2, tuple(parse_cards("2H 3H")), Violation.WRONG_PASS_COUNT, kind="pass"),
        Refused("127.0.0.1:1", "bot", grpc.StatusCode.UNAUTHENTICATED, "bad token"),
        ConfigError("--boards must be at least 1"),
        SeatError("seat 9 is not at the table"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_error_pickles_with_its_message_and_attributes(error: Exception) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert (str(back), back.args, back.__dict__) == (str(error), error.args, error.__dict__)


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    """A hand's record as GameRecord.to_dict gives it (played by the engine)."""
    return play_record("t1", ("a", "b", "c", "d"), 7).to_dict()


CORRUPTIONS = [
    ("totals", lambda r: r.__setitem__("totals", [34.9, "8", 28, True]), "totals must be a list"),
    (
        "cards as one text",
        lambda r: r["decisions"][0].__setitem__("cards", "QS"),
        "cards must be a list of card codes, got 'QS'",
    ),
    (
        "forced as text",
        lambda r: r["decisions"][0].__setitem__("forced", "false"),
        "forced must be true or false, got 'false'",
    ),
    (
        "trick cards as one text",
        lambda r: r["hands"][0]["tricks"][0].__setitem__("cards", "2C 3C"),
        "cards must be a list of card codes",
    ),
    (
        "moon as text",
        lambda r: r["hands"][0].__setitem__("moon", "nobody"),
        "moon must be a whole number, got 'nobody'",
    ),
    (
        "seat as a fraction",
        lambda r: r["decisions"][0].__setitem__("seat", 2.7),
        "seat must be a whole number, got 2.7",
    ),
    (
        "elapsed as text",
        lambda r: r["decisions"][0].__setitem__("elapsed_ms", "3"),
        "elapsed_ms must be a number, got '3'",
    ),
    (
        "reason as a number",
        lambda r: r.__setitem__("reason", 7),
        "reason must be text, got 7",
    ),
]


@pytest.mark.parametrize(
    ("corrupt", "words"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_a_record_with_values_of_another_type_is_refused_naming_the_field(
    record: dict[str, Any], corrupt: Any, words: str
) -> None:
    assert GameRecord.from_dict(json.loads(json.dumps(record))).to_dict() == record
    bad = json.loads(json.dumps(record))
    corrupt(bad)
    # Read as (34, 8, 28, 1), ("Q", "S"), True, ("2", "C", " ", "3", "C"), "nobody" and 2.
    with pytest.raises(ConfigError, match=r"^not a valid .*" + words.replace("(", r"\(")):
        GameRecord.from_dict(bad)


@pytest.mark.parametrize("text", ["QS", "qs", "Qs", " QS\n", "\tqs\r", "10S", "10s"])
def test_card_parse_reads_what_the_referee_reads(text: str) -> None:
    assert Card.parse(text) is (Card.parse("TS") if "10" in text else Card.parse("QS"))


@pytest.mark.parametrize(
    "text", ["Qſ", "\xa0QS", "\u2003QS", "QS\u3000", "QS\v", "Q♠", "ＱＳ"], ids=repr
)
def test_card_parse_refuses_what_the_referee_refuses(text: str) -> None:
    # str.strip() took any Unicode space and str.upper() made "ſ" an "S": a bot that checked its
    # answer with Card.parse was then refused by the referee as MALFORMED.
    with pytest.raises(CardParseError, match=r"^cannot parse card "):
        Card.parse(text)
    opening = text.replace("Q", "2").replace("S", "C").replace("♠", "♣")  # "2ſ": no card
    with pytest.raises(CardParseError):  # the engine took " 2C" and played it
        Hand.deal(Rules(pass_count=0), 1).play(opening)


def test_the_fallback_player_takes_codes_and_refuses_a_count_that_makes_no_sense() -> None:
    assert fallback_play(["2H", "2S"]) == Card.parse("2H")
    assert fallback_pass("2C 3D AS", 1) == (Card.parse("2C"),)
    # -1 passed all the cards but the last (a slice's end).
    with pytest.raises(RulesError, match=r"^rules\.pass_count: cannot pass -1 cards from a hand"):
        fallback_pass(parse_cards("2C 3D AS"), -1)
    with pytest.raises(RulesError, match=r"cannot pass 5 cards from a hand of 3$"):
        fallback_pass(parse_cards("2C 3D AS"), 5)
    with pytest.raises(ValueError, match=r"with no legal card"):
        fallback_play([])


@pytest.mark.parametrize("seed", [-1, 2**63, 10**5000], ids=["-1", "2**63", "10**5000"])
def test_the_engine_deals_the_seeds_a_table_deals_and_no_other(seed: int) -> None:
    words = r"^seed must be a whole number from 0 to 9223372036854775807 \(2\*\*63 - 1\)"
    for deal in (
        lambda: Hand.deal(Rules(), seed),
        lambda: Game(Rules(), seed),
        lambda: deal_order(Rules(), seed),
        lambda: play_local([Bot() for _ in range(4)], seed=seed, hands=1),
    ):
        with pytest.raises(ConfigError, match=words):
            deal()
    assert Hand.deal(Rules(), 2**63 - 1).hand(0) != Hand.deal(Rules(), 0).hand(0)
