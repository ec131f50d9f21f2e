"""Ratings written into reviews, which end of the scale goes with which label, and the ``rating`` check."""

from __future__ import annotations

import csv

import pytest

from engine.text.ratings import against, find_ratings, rating_sides, suggestion
from engine.verification.checks import Subject, run_checks

SIDES = {"Positive": "high", "Negative": "low"}


@pytest.mark.parametrize(("text", "found"), [
    ("In all, I gave this movie a 4/10 rating.", [("4/10", 0.4)]),
    ("A lousy 3 out of 10 for this crap.", [("3 out of 10", 0.3)]),
    ("I would rate it a 9.0 on a scale of 10.", [("9.0 on a scale of 10", 0.9)]),
    ("6 on a scale from 1 to 10, and 85/100 for the music.", [("6 on a scale from 1 to 10", 0.6), ("85/100", 0.85)]),
    ("A must-see! 10/10 stars!", [("10/10", 1.0)]),
    ("Four stars: 4 out of 5.", [("4 out of 5", 0.8)]),
    ("Good suspense.9 out of 10-just another", [("9 out of 10", 0.9)]),  # glued to the sentence before
    ("It gets 8.5/10 and 0/10 for the ending.", [("8.5/10", 0.85), ("0/10", 0.0)]),
    # a number given to the film without a scale: IMDb's 10 is implied, and only the number is the rating
    ("Only reason why I did give it a 2 was that worse movies could exist.", [("2", 0.2)]),
    ("I rated this movie a 9 for its cast, and I'd give it an 8.5 again.", [("9", 0.9), ("8.5", 0.85)]),
    ("I give it a 10/10", [("10/10", 1.0)]),
])
def test_ratings_are_found_with_their_share_of_the_scale(text, found):
    assert [(r.text, r.share) for r in find_ratings(text)] == found


@pytest.mark.parametrize("text", [
    "It came out after 9/11.", "Seen on 12/10/2005 and again 5/26/2002.", "About 3/4 of the way in it drags.",
    "7 out of 10 people walked out.", "It ranked 146 out of 146 shows.", "Worth 1/4 or 1/8 of the budget.",
    "*1/2 from ****", "It runs 24/7 on cable.", "He scored 11/10 in my book.",
    "Give it 2 hours and you will see.", "It deserves a 2nd chance, so give it a 2nd look.", "I give it 4 stars.",
    "It is rated R.", "He scored 100 points.", "Give it 3 tries.", "I gave it a 15 for effort.",
])
def test_dates_fractions_and_counts_are_not_ratings(text):
    assert find_ratings(text) == []


def test_sides_are_learned_from_cad_train(shared_data):
    with open(shared_data / "cad/sentiment/combined/paired/train_paired.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert rating_sides([r["Text"] for r in rows], [r["Sentiment"] for r in rows]) == SIDES
    # the sides come from the data: labels named otherwise, or turned around, are read as they are
    flipped = {"Positive": "Low", "Negative": "High"}
    assert rating_sides([r["Text"] for r in rows], [flipped[r["Sentiment"]] for r in rows]) == {
        "High": "low", "Low": "high"}


def test_no_sides_without_enough_ratings_or_without_a_gap():
    assert rating_sides(["A 9/10."] * 7 + ["A 2/10."] * 7, ["p"] * 7 + ["n"] * 7) == {}
    assert rating_sides(["A 6/10."] * 9 + ["A 5/10."] * 9, ["p"] * 9 + ["n"] * 9) == {}
    three = ["A 9/10."] * 9 + ["A 5/10."] * 9 + ["A 1/10."] * 9
    assert rating_sides(three, ["p"] * 9 + ["m"] * 9 + ["n"] * 9) == {"p": "high", "n": "low"}


def test_against_reads_the_target_side_and_the_middle():
    assert [r.text for r in against("Dull, but 9/10.", "Negative", "Positive", SIDES)] == ["9/10"]
    assert against("Dull, 2/10, and 5/10 for the music.", "Negative", "Positive", SIDES) == []
    sides = {"p": "high", "n": "low"}  # a middle label "m" has no side: only the original's side is wrong
    assert [r.text for r in against("A 9/10 and a 2/10.", "m", "p", sides)] == ["9/10"]
    assert against("A 9/10.", "n", "p", {}) == []


def test_suggestion_writes_the_rating_at_the_target_end():
    assert suggestion(find_ratings("a 10/10")[0], "low") == "2/10"
    assert suggestion(find_ratings("3 out of 10")[0], "high") == "8 out of 10"
    assert suggestion(find_ratings("8.5/10")[0], "low") == "2.0/10"


def _verdict(new: str, sides=SIDES, target="Negative") -> dict:
    subject = Subject(original={"text": "Superb. 10/10."}, new={"text": new}, labels=["Negative", "Positive"],
                      target=target, original_label="Positive", rating_sides=sides)
    return run_checks(subject, type("Rule", (), {"min_member_prob": 0.0})(), ["rating"])["rating"].to_dict()


def test_rating_check_fails_a_kept_rating_and_passes_a_turned_one():
    assert _verdict("Dreadful. 10/10.") == {"status": "fail", "reason": 'rates it "10/10", a rating that goes with '
                                                                         "Positive"}
    assert _verdict("Dreadful. 2/10.") == {"status": "pass", "reason": '"2/10" fits'}
    assert _verdict("Dreadful.") == {"status": "pass", "reason": "no rating"}
    assert _verdict("Dreadful. 10/10.", sides={})["status"] == "skip"


def test_a_school_grade_after_a_cue_is_a_rating_on_a_scale_of_four():
    # seen in CAD: a candidate turned every opinion of a review Negative and kept its "GRADE: B"
    assert _verdict("Dreadful film. GRADE: B") == {"status": "fail", "reason": 'rates it "B", a rating that goes '
                                                                               "with Positive"}
    assert _verdict("Dreadful film. GRADE: D")["status"] == "pass"
    assert [(r.text, r.side) for r in find_ratings("My Grade:F <br /><br />Enough. I'd give it a C.")] == [
        ("F", "low"), ("C", None)]
    assert find_ratings("Vitamin B and a grade A student; rating: A bit long.") == []
    assert suggestion(find_ratings("Grade: B+")[0], "low") == "D"
