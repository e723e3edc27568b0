"""The SPRT's arithmetic: bounds, the log-likelihood ratio, decisions, and refused set-ups."""

from __future__ import annotations

import dataclasses
import math

import pytest

from arena.ratings import TableResult
from arena.ratings.simulate import simulate_board_scores
from arena.ratings.sprt import (
    Sprt,
    SprtDecision,
    SprtError,
    board_score,
    elo_to_score,
    score_to_elo,
)


def test_bounds_are_walds() -> None:
    test = Sprt(elo0=0.0, elo1=10.0, alpha=0.05, beta=0.1)
    assert test.bounds.lower == pytest.approx(math.log(0.1 / 0.95))
    assert test.bounds.upper == pytest.approx(math.log(0.9 / 0.05))
    assert test.decision is SprtDecision.CONTINUE and test.llr == 0.0


def test_llr_is_the_normal_approximation_with_the_shrunk_variance() -> None:
    test = Sprt(elo0=0.0, elo1=20.0)
    scores = [0.75, 0.5, 0.25, 1.0, 0.625, 0.5, 0.875, 0.375]
    for score in scores:
        test.update(score)
    n = len(scores)
    mean = sum(scores) / n
    squares = sum((x - mean) ** 2 for x in scores)
    variance = (squares + 0.25) / (n + 1)
    s0, s1 = 0.5, 1 / (1 + 10 ** (-20 / 400))
    assert test.mean == pytest.approx(mean)
    assert test.variance == pytest.approx(variance)
    assert test.llr == pytest.approx(n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * variance))


def test_a_clearly_stronger_b_is_accepted_and_a_weaker_one_rejected() -> None:
    strong = Sprt(0.0, 20.0)
    decisions = []
    for score in simulate_board_scores(150.0, 500, seed=1).tolist():
        decisions.append(strong.update(score))
        if decisions[-1] is not SprtDecision.CONTINUE:
            break
    assert decisions[-1] is SprtDecision.ACCEPT_H1 and len(decisions) < 500
    assert set(decisions[:-1]) == {SprtDecision.CONTINUE}
    assert strong.llr >= strong.bounds.upper
    weak = Sprt(0.0, 20.0)
    for score in simulate_board_scores(-150.0, 500, seed=2).tolist():
        if weak.update(score) is not SprtDecision.CONTINUE:
            break
    assert weak.decision is SprtDecision.ACCEPT_H0
    assert weak.boards < 500


def test_a_short_run_of_identical_scores_does_not_end_the_test() -> None:
    test = Sprt(0.0, 20.0)
    for _ in range(3):
        assert test.update(1.0) is SprtDecision.CONTINUE
    while test.update(1.0) is SprtDecision.CONTINUE:
        assert test.boards < 60
    assert test.decision is SprtDecision.ACCEPT_H1


def test_status_shows_llr_bounds_and_decision() -> None:
    test = Sprt(0.0, 20.0)
    for score in (0.75, 0.5, 0.625):
        test.update(score)
    status = test.status
    assert "boards 3" in status
    assert f"LLR {test.llr:+.2f} (-2.94, +2.94)" in status
    assert status.endswith("continue")
    elo, low, high = test.elo()
    assert low < elo < high
    assert elo == pytest.approx(score_to_elo(test.mean))


def test_elo_and_score_are_inverse() -> None:
    for elo in (-400.0, -20.0, 0.0, 35.0, 191.0):
        assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo)
    assert elo_to_score(400 * math.log10(3)) == pytest.approx(0.75)
    assert score_to_elo(1.0) == math.inf and score_to_elo(0.0) == -math.inf


@pytest.mark.parametrize(
    ("elo0", "elo1", "alpha", "beta", "match"),
    [
        (10.0, 0.0, 0.05, 0.05, "elo0"),
        (0.0, 10.0, 0.0, 0.05, "alpha"),
        (0.0, 10.0, 0.6, 0.5, "sum below 1"),
        (0.0, math.inf, 0.05, 0.05, r"elo1 \(inf\) must be a finite Elo difference"),
        (-math.inf, 0.0, 0.05, 0.05, r"elo0 \(-inf\) must be a finite"),
        (math.nan, 0.0, 0.05, 0.05, "elo0"),
        (-1e308, 0.0, 0.05, 0.05, "from -2000 to 2000"),  # overflowed computing the score
    ],
)
def test_impossible_set_ups_are_refused(
    elo0: float, elo1: float, alpha: float, beta: float, match: str
) -> None:
    with pytest.raises(SprtError, match=match):
        Sprt(elo0, elo1, alpha, beta)


def test_a_score_outside_the_unit_interval_is_refused() -> None:
    with pytest.raises(SprtError, match=r"1\.5"):
        Sprt().update(1.5)
    # Text was a bare TypeError from the comparison; NaN is no score either.
    for bad in ("0.5", None, math.nan):
        with pytest.raises(SprtError, match=r"^a board score is a number in \[0, 1\], not "):
            Sprt().update(bad)  # type: ignore[arg-type]


def test_board_score_is_b_share_against_a_over_the_rotations() -> None:
    board = [
        TableResult("d", ("A", "B", "f1", "f2"), (3.0, 0.0, 10.0, 13.0)),  # B beats A
        TableResult("d", ("f2", "A", "B", "f1"), (0.0, 4.0, 4.0, 18.0)),  # draw
        TableResult("d", ("f1", "f2", "A", "B"), (5.0, 5.0, 1.0, 15.0)),  # A beats B
        TableResult("d", ("B", "f1", "f2", "A"), (2.0, 2.0, 20.0, 2.0)),  # draw
    ]
    assert board_score(board, "A", "B") == pytest.approx(0.5)
    assert board_score(board[:2], "A", "B") == pytest.approx(0.75)
    assert board_score(board[:2], "B", "A") == pytest.approx(0.25)
    with pytest.raises(SprtError, match="never sat"):
        board_score(board, "A", "nobody")
    # B took fewer points than A but forfeited its seat: A wins the pair.
    forfeit = TableResult(
        "d", ("A", "B", "f1", "f2"), (3.0, 0.0, 10.0, 13.0), forfeits=(False, True, False, False)
    )
    assert board_score([forfeit], "A", "B") == 0.0


def test_the_verdict_says_which_hypothesis_is_favoured_not_the_gap() -> None:
    # At a true +10 with [0, 20], H1 is accepted about half the time: "B is stronger by about
    # 20" would overstate it; the verdict says what the test decides.
    strong = Sprt(0.0, 20.0)
    while strong.update(1.0) is SprtDecision.CONTINUE:
        pass
    verdict = strong.verdict("old", "new")
    assert verdict.startswith("H1 accepted: the test favours elo1 = 20 over elo0 = 0")
    assert "new is likely stronger than old" in verdict
    assert "not a measure of the gap" in verdict and "about 20" not in verdict
    weak = Sprt(0.0, 20.0)
    while weak.update(0.0) is SprtDecision.CONTINUE:
        pass
    assert weak.verdict("old", "new") == (
        "H0 accepted: the test favours elo0 = 0 over elo1 = 20; "
        "new is likely at most 20 Elo stronger than old"
    )
    shifted = Sprt(5.0, 25.0)
    while shifted.update(1.0) is SprtDecision.CONTINUE:
        pass
    assert "new is likely stronger than old by more than 5 Elo" in shifted.verdict("old", "new")
    assert Sprt().verdict() == "no decision yet after 0 boards"


def test_status_before_any_board_has_no_negative_zero() -> None:
    status = Sprt(-20.0, 0.0).status
    assert "-0.0" not in status and "-0.00" not in status and "[-20, 0]" in status
    assert "elo +0.0" in status and "LLR +0.00" in status


def test_status_writes_an_open_bound_as_the_ratings_tables_do() -> None:
    # It wrote "elo +inf [-141.4, +inf]", where `arena ratings` writes "[-141.4, +∞)".
    from arena.ratings import fit
    from arena.ratings.report import interval_text

    test = Sprt(0.0, 20.0)
    assert "elo +0.0 (-∞, +∞)  LLR" in test.status
    test.update(1.0)
    assert "elo +∞ [-141.4, +∞)  LLR" in test.status and "inf" not in test.status
    # The words of a ratings row with the same bounds: one function writes both.
    _, low, high = test.elo()
    row = dataclasses.replace(fit(_a_board()).rows()[0], low=low, high=high)
    assert f" {interval_text(row, None)[2]}  LLR" in test.status
    test.update(0.0)
    test.update(0.0)
    assert "elo -120.4 (-∞, +338.1]  LLR" in test.status and "inf" not in test.status


def _a_board() -> list[TableResult]:
    """One board of A, B and two fillers in every rotation, for a fit to take rows from."""
    seats = ("A", "B", "f1", "f2")
    return [
        TableResult("d", seats[r:] + seats[:r], tuple(float(x) for x in (3, 5, 8, 10)))
        for r in range(4)
    ]


def test_an_llr_short_of_its_bound_never_reads_as_the_bound() -> None:
    # "LLR +2.94 (-2.94, +2.94) ... continue" read as decided.
    from arena.ratings.sprt import _llr_text

    assert _llr_text(2.9391, -2.944, 2.944) == "+2.939"
    assert _llr_text(-2.9391, -2.944, 2.944) == "-2.939"
    assert _llr_text(1.5, -2.944, 2.944) == "+1.50"
    assert _llr_text(2.95, -2.944, 2.944) == "+2.95"  # past it: decided, as shown


def test_a_decided_test_takes_no_more_boards() -> None:
    # Fed on after its decision, the LLR fell back between the bounds: the test said
    # "continue" again after it had accepted H1.
    test = Sprt(0.0, 20.0)
    while test.update(1.0) is SprtDecision.CONTINUE:
        pass
    boards = test.boards
    with pytest.raises(
        SprtError, match=rf"^the test has decided \(H1 accepted after {boards} boards\)"
    ):
        test.update(0.0)
    assert test.boards == boards and test.decision is SprtDecision.ACCEPT_H1
