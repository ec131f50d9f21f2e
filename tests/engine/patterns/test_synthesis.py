"""Pattern synthesis finds a planted pattern; its scores agree with the matcher; stored; the CLI."""

from __future__ import annotations

import csv
import json
import random

import pytest

from engine.cli import main
from engine.io import ImportOptions, import_file
from engine.patterns import Matcher
from engine.patterns.errors import PatternError
from engine.patterns.store import load_patterns
from engine.patterns.synthesis import score_pattern, synthesize, synthesize_dataset
from engine.progress import CancelToken
from engine.errors import Cancelled
from engine.store import Project

FILLERS = ["The pasta came with warm bread.", "We sat near the window.", "Prices were fair for the area.",
           "Parking was easy to find.", "The dessert menu is short.", "I ordered the fish.", "It was a Tuesday."]
MOODS = ["rude", "slow", "late", "careless", "grumpy", "friendly", "quick", "cheerful"]
OPENERS = ["Our", "The", "My", "That"]


def planted(seed: int = 0, n: int = 30) -> tuple[list[str], list[str]]:
    """'service' texts say '<det> waiter was <adj>'; 'food' texts have a waiter, 'was' and the same adjectives, apart."""
    rng = random.Random(seed)
    service = [f"{rng.choice(FILLERS)} {rng.choice(OPENERS)} waiter was {rng.choice(MOODS)}. {rng.choice(FILLERS)}"
               for _ in range(n)]
    food = [f"{rng.choice(FILLERS)} The soup was {rng.choice(MOODS + ['hot', 'bland'])}, so {rng.choice(OPENERS).lower()} "
            f"waiter took it back. {rng.choice(FILLERS)}" for _ in range(n)]
    return service + food, ["service"] * n + ["food"] * n


def test_synthesis_finds_the_planted_pattern():
    texts, labels = planted()
    found = synthesize(texts, labels, "service", max_elements=3)
    best = found[0]
    print("\n".join(f"{p.pattern:30} P={p.precision:.2f} R={p.recall:.2f}" for p in found[:5]))
    assert best.precision == 1.0 and best.recall == 1.0
    assert "waiter" in best.pattern and "was" in best.pattern.replace("[be]", "was").replace("AUX", "was")
    matcher = Matcher(soft="forms")
    assert all(matcher.matches(best.pattern, t) == (lab == "service") for t, lab in zip(texts, labels, strict=True))


def test_synthesized_scores_are_the_matchers_scores():
    texts, labels = planted(seed=4, n=20)
    for p in synthesize(texts, labels, "food", top=8, min_precision=0.0, soft="forms"):
        again = score_pattern(p.pattern, texts, labels, "food", soft="forms")
        assert (again.matched, again.matched_label) == (p.matched, p.matched_label), p.pattern


def test_soft_elements_and_alternatives():
    texts = ["The menu was expensive.", "Everything felt costly.", "Such pricey wine.", "The price was absurd.",
             "We loved the view.", "The chairs were red.", "A calm evening.", "Music was loud."]
    labels = ["price"] * 4 + ["other"] * 4
    found = synthesize(texts, labels, "price", soft="embedding", max_elements=1)
    best = found[0]
    assert best.recall == 1.0 and best.precision == 1.0, found[:3]
    assert "(" in best.pattern or "|" in best.pattern


def test_errors_and_cancel():
    with pytest.raises(PatternError):
        synthesize(["a"], ["x"], "y")
    with pytest.raises(PatternError):
        synthesize(["a", "b"], ["x"], "x")
    token = CancelToken()
    token.cancel()
    texts, labels = planted(n=5)
    with pytest.raises(Cancelled):
        synthesize(texts, labels, "service", cancel=token)


@pytest.fixture
def project(tmp_path):
    texts, labels = planted(seed=2, n=25)
    src = tmp_path / "reviews.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(zip(texts, labels, strict=True))
    path = tmp_path / "p.cbproj"
    with Project.create(path) as p:
        import_file(p, src, options=ImportOptions(name="reviews"))
    return path


def test_dataset_patterns_stored_and_replaced(project):
    with Project.open(project) as p:
        found = synthesize_dataset(p, p.dataset("reviews").id, top=5)
        assert set(found) == {"service", "food"}
        stored = load_patterns(p, p.dataset("reviews").id, "service")
        assert stored[0].pattern == found["service"][0].pattern and stored[0].source == "synthesized"
        synthesize_dataset(p, p.dataset("reviews").id, labels=["service"], top=2)
        assert len(load_patterns(p, p.dataset("reviews").id, "service")) == 2
        assert len(load_patterns(p, p.dataset("reviews").id, "food")) == len(found["food"])
    with Project.open(project) as p:  # reloaded
        assert len(load_patterns(p, p.dataset("reviews").id)) == 2 + len(found["food"])


def test_cli_patterns(project, capsys):
    assert main(["-q", "patterns", str(project), "reviews", "--top", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["label"] for r in rows} == {"service", "food"} and rows[0]["precision"] is not None
    assert main(["-q", "patterns", str(project), "reviews", "--add", "[waiter]+AUX+ADJ", "--label", "service",
                 "--json"]) == 0
    mine = [r for r in json.loads(capsys.readouterr().out) if r["source"] == "analyst"]
    assert mine and mine[0]["pattern"] == "[waiter]+AUX+ADJ" and mine[0]["recall"] == 1.0
    assert main(["-q", "patterns", str(project), "reviews", "--remove", str(mine[0]["id"])]) == 0
    capsys.readouterr()
    assert main(["-q", "patterns", str(project), "reviews", "--list"]) == 0
    assert "[waiter]+AUX+ADJ" not in capsys.readouterr().out
    for argv in (["--add", "[waiter+ADJ", "--label", "service"], ["--add", "waiter"], ["--remove", "999"],
                 ["--label", "dessert"]):
        assert main(["-q", "patterns", str(project), "reviews", *argv]) == 3, argv
    err = capsys.readouterr().err
    assert "CB971" in err and "Traceback" not in err
