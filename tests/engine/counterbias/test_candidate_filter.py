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


def _with_accuracy(scores, *accuracies):
    for member, acc in zip(scores["judge"]["members"].values(), accuracies, strict=True):
        member["dev_accuracy"] = acc
    return scores


def test_the_best_member_rule_reads_only_the_most_accurate_member():
    rule = CandidateFilter(agreement="best")
    # m1 is the most accurate: its 0.91 decides, the weaker m0's 0.40 does not veto
    assert rule.passes(_with_accuracy(_scores(0.40, 0.91, 0.70), 0.80, 0.89, 0.77))
    assert not rule.passes(_with_accuracy(_scores(0.99, 0.62, 0.97), 0.80, 0.89, 0.77))
    assert not CandidateFilter().passes(_with_accuracy(_scores(0.40, 0.91, 0.70), 0.80, 0.89, 0.77))
    # the flip is still the majority's
    assert not rule.passes(_with_accuracy(_scores(0.40, 0.91, 0.30, flipped=False), 0.80, 0.89, 0.77))
    # no accuracy stored (scores judged before it was): every member counts
    assert not rule.passes(_scores(0.40, 0.91, 0.70))
    assert rule.passes(_scores(0.90, 0.91, 0.88))


def test_the_agreement_verdict_names_the_member_that_decided():
    from engine.verification.checks import FAIL, PASS, Subject, member_agreement

    def verdict(scores, rule):
        return member_agreement(Subject({"text": "a"}, {"text": "b"}, ["Negative", "Positive"], "Positive",
                                        "Negative", scores=scores), rule)

    scores = _with_accuracy(_scores(0.40, 0.91, 0.70), 0.80, 0.89, 0.77)
    best = verdict(scores, CandidateFilter(agreement="best"))
    assert best.status == PASS and "m1" in best.reason and "0.89" in best.reason
    each = verdict(scores, CandidateFilter())
    assert each.status == FAIL and "m0 0.40" in each.reason and "m2 0.70" in each.reason and "m1" not in each.reason
    low = verdict(_with_accuracy(_scores(0.99, 0.62, 0.97), 0.80, 0.89, 0.77), CandidateFilter(agreement="best"))
    assert low.status == FAIL and "m1 0.62" in low.reason and "m0" not in low.reason


def test_an_unknown_agreement_is_a_named_error():
    import pytest

    from engine.verification.checks import UnknownAgreementError

    with pytest.raises(UnknownAgreementError, match="CB931"):
        CandidateFilter(agreement="most")


def _residual(text, left, rule):
    from engine.verification.checks import Subject, residual

    meta = {"fields": [{"field": "text", "residual": left}]}
    return residual(Subject({"text": "x"}, {"text": text}, ["Negative", "Positive"], "Negative", "Positive",
                            meta=meta), rule)


def test_the_residual_check_allows_a_share_of_sentences_left():
    """A long review with one sentence of ten still read as the original label passes by default (human CAD
    revisions leave such sentences too); two of five do not; a share of 0 holds back any."""
    import pytest

    from engine.verification.checks import FAIL, PASS, AcceptRuleError

    long = " ".join(f"Sentence {i} is dull." for i in range(9)) + " The cast is lovely."
    verdict = _residual(long, ["The cast is lovely."], CandidateFilter())
    assert verdict.status == PASS and verdict.reason.startswith("1 of 10 sentences still reads as Positive")
    assert _residual(long, ["The cast is lovely."], CandidateFilter(max_residual_share=0.0)).status == FAIL
    short = "It is dull. The cast is lovely. A joy. It drags. It ends."
    verdict = _residual(short, ["The cast is lovely.", "A joy."], CandidateFilter())
    assert verdict.status == FAIL and verdict.reason.startswith("2 of 5 sentences still read as Positive (at most 20")
    assert _residual(short, [], CandidateFilter()).status == PASS
    with pytest.raises(AcceptRuleError, match="CB932"):
        CandidateFilter(max_residual_share=1.5)


def _untouched(original, edits, rule, mode="edit"):
    from engine.verification.checks import Subject, untouched

    meta = {"mode": mode, "fields": [{"field": "text", "edits": edits}]}
    return untouched(Subject({"text": original}, {"text": "x"}, ["Negative", "Positive"], "Negative", "Positive",
                             meta=meta), rule)


def test_the_untouched_check_is_off_by_default_and_counts_sentences_left_as_written():
    """Off unless asked; with ``max_untouched=0`` a candidate that left one sentence as written fails, an edit or a
    removal touches its sentence, and candidates that are not sentence edits are skipped."""
    import pytest

    from engine.verification.checks import FAIL, PASS, SKIP, AcceptRuleError

    original = "Great cast. The plot moves. Highly recommended."
    edits = [{"index": 0, "new": "Weak cast."}, {"index": 2, "new": ""}, {"index": 1, "new": None}]
    assert _untouched(original, edits, CandidateFilter()).status == SKIP
    strict = CandidateFilter(max_untouched=0)
    verdict = _untouched(original, edits, strict)
    assert verdict.status == FAIL and verdict.reason == "1 of 3 sentences left as written (at most 0 may)"
    assert _untouched(original, edits, CandidateFilter(max_untouched=1)).status == PASS
    assert _untouched(original, [*edits[:2], {"index": 1, "new": "The plot drags."}], strict).status == PASS
    assert _untouched(original, edits, strict, mode="reconstruct").status == SKIP
    assert "untouched" in strict.required() and "untouched" in CandidateFilter().required()
    with pytest.raises(AcceptRuleError, match="CB932"):
        CandidateFilter(max_untouched=-1)
    # the rule reads the verdicts: a failed untouched check holds the candidate back
    scores = {**_scores(0.95, 0.95), "verdicts": {"untouched": verdict.to_dict()}}
    assert not strict.passes(scores)
