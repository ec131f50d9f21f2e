"""The accept filter on hand-made judge scores."""

from engine.counterbias import CandidateFilter


def _scores(*probs, flipped=True, kept=True):
    members = {f"m{i}": {"label": "Positive" if p >= 0.5 else "Negative", "target_prob": p} for i, p in enumerate(probs)}
    return {"judge": {"members": members, "flipped": flipped, "left_original": flipped,
                      "target_prob": sum(probs) / len(probs)}, "spurious_kept": kept}


def test_every_member_must_be_confident_by_default():
    rule = CandidateFilter()
    assert rule.passes(_scores(0.93, 0.88))
    assert not rule.passes(_scores(0.91, 0.82))  # one member only barely convinced
    assert not rule.passes(_scores(0.95, 0.95, flipped=False))
    assert not rule.passes(_scores(0.95, 0.95, kept=False))
    assert CandidateFilter(min_member_prob=0.0).passes(_scores(0.8, 0.2))  # the flip alone, as before
    assert not CandidateFilter(min_member_prob=0.0, min_target_prob=0.6).passes(_scores(0.8, 0.2))
