"""Named checks on a generated candidate, each giving a verdict with its reason.

A check is a function ``check(subject, criteria) -> Verdict`` registered in :data:`CHECKS`
under its name. The verification of a candidate runs every registered check (the judge's
scores are computed first, the checks only read them) and stores the verdicts in
``candidates.scores["verdicts"]`` as ``{name: {"status": "pass"|"fail"|"skip", "reason": ...}}``.
Which failing verdicts hold a candidate back is the accept rule's choice
(:class:`~engine.counterbias.verify.CandidateFilter`).

Built-in checks
---------------
``label-flip``       the ensemble's majority predicts the target label (LFR)
``soft-flip``        the majority no longer predicts the original label (SLFR)
``member-agreement`` every member (or, with ``agreement="best"``, the member with the best dev accuracy)
                     gives the target at least ``min_member_prob``
``spurious-kept``    every spurious word of the original is still there (swapped gendered words and words
                     released as opinion words excepted)
``prompt-echo``      no prompt scaffolding ("Sentence to edit:", "Here is …")
``prompt-leak``      no sentence or 6-word run of the prompts' few-shot examples
``refusal``          the model did not decline
``bare-label``       the text is more than a label name
``commentary``       the text is a text, not a description of one ("The reviewer expresses …")
``formatting``       no markdown or list formatting the original lacks
``truncation``       the text is complete
``copy``             the text differs from the original in its words
``coined-word``      no made-up word: every new word is in an English word list or the dataset's texts
``rating``           no rating ("9/10") that goes with another label than the target (when the train split
                     ties the ends of a rating scale to labels, :mod:`engine.text.ratings`)
``pattern``          the example's symbolic pattern still matches (when the candidate has one)
``llm-judge``        an LLM, asked which label the text expresses, names the target (when run)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.errors import CounterbiasError
from engine.registry import Registry
from engine.verification import heuristics



class CandidateFilter(Protocol):
    """What the checks read from the accept rule (:class:`engine.counterbias.verify.CandidateFilter`)."""

    min_member_prob: float
    agreement: str

__all__ = ["AGREEMENTS", "CHECKS", "LABEL_CHECKS", "UnknownAgreementError", "UnknownCheckError", "Subject", "Verdict",
           "agreement_shortfall", "label_judged", "run_checks", "untouched_sentences"]

#: Which members' P(target) the ``member-agreement`` check reads: ``each`` (every member) or ``best``
#: (the member with the highest dev accuracy; every member when an accuracy is not stored).
AGREEMENTS = ("each", "best")

PASS, FAIL, SKIP = "pass", "fail", "skip"


class UnknownCheckError(CounterbiasError):
    """A check name that is not registered."""

    code = "CB930"


class UnknownAgreementError(CounterbiasError):
    """An accept rule's ``agreement`` that is not one of :data:`AGREEMENTS`."""

    code = "CB931"


class AcceptRuleError(CounterbiasError):
    """An accept rule's setting out of range (``max_residual_share`` outside 0 to 1)."""

    code = "CB932"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: ``status`` (pass/fail/skip) and a short ``reason``."""

    status: str
    reason: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "reason": self.reason}

    @classmethod
    def of(cls, problem: str | None, ok: str = "") -> Verdict:
        """``fail`` with ``problem`` as the reason, or ``pass`` with ``ok`` when there is none."""
        return cls(FAIL, problem) if problem else cls(PASS, ok)


@dataclass(frozen=True)
class Subject:
    """What the checks see of one candidate.

    Parameters
    ----------
    original, new
        ``{field: text}`` of the fields the candidate changed: the original's and the candidate's.
    labels
        The label set of the task.
    target, original_label
        The wanted label and the original example's label.
    scores
        The judge's scores already computed (``judge``, ``spurious_kept``, ``missing_spurious``)
        and verdicts of earlier, expensive checks (``llm_judge``).
    meta
        The candidate's ``meta`` (generation steps; ``pattern`` when it was made to keep one).
    mode
        The generation mode (``edit``/``reconstruct``/other), which picks the prompts a leak is looked for in.
    rating_sides
        Which label goes with which end of a rating scale in the dataset (``{label: "high"|"low"}``,
        :func:`engine.attribution.word_prior.label_rating_sides`); empty: the ``rating`` check is skipped.
    vocabulary
        Words of the dataset's texts (lowercase, :func:`engine.text.lexicon.corpus_words`), accepted by the
        ``coined-word`` check besides the English word list.
    """

    original: Mapping[str, str]
    new: Mapping[str, str]
    labels: Sequence[str]
    target: str
    original_label: str = ""
    scores: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    mode: str = "edit"
    rating_sides: Mapping[str, str] = field(default_factory=dict)
    vocabulary: frozenset[str] = frozenset()

    def pairs(self) -> list[tuple[str, str]]:
        """``(new, original)`` of each changed field."""
        return [(text or "", self.original.get(name) or "") for name, text in self.new.items()]


Check = Callable[[Subject, "CandidateFilter"], Verdict]

CHECKS: Registry[Check] = Registry(
    "verification check",
    UnknownCheckError,
    builtins={name: f"engine.verification.checks:{attr}" for name, attr in (
        ("label-flip", "label_flip"), ("soft-flip", "soft_flip"), ("member-agreement", "member_agreement"),
        ("spurious-kept", "spurious_kept"), ("prompt-echo", "prompt_echo"), ("prompt-leak", "prompt_leak"),
        ("refusal", "refusal"), ("bare-label", "bare_label"), ("label-named", "label_named"), ("commentary", "commentary"), ("formatting", "formatting"),
        ("truncation", "truncation"), ("copy", "copy"), ("coined-word", "coined_word"), ("repetition", "repetition"), ("rating", "rating"), ("pattern", "pattern"),
        ("llm-judge", "llm_judge"), ("residual", "residual"), ("untouched", "untouched"))},
)

#: Short human titles for the panel and reports.
TITLES = {
    "label-flip": "Label flipped (ensemble)", "soft-flip": "Original label left (ensemble)",
    "member-agreement": "Members sure of the target", "spurious-kept": "Spurious words kept", "prompt-echo": "No prompt echo",
    "prompt-leak": "No few-shot leak", "refusal": "No refusal", "bare-label": "Not a bare label", "label-named": "Expresses the label, does not name it",
    "commentary": "A text, not a comment on it",
    "formatting": "No markdown/list formatting", "truncation": "Complete (not truncated)",
    "copy": "Not a copy of the original", "coined-word": "No made-up words", "repetition": "No clause said twice", "rating": "Rating fits the target", "pattern": "Symbolic pattern kept", "llm-judge": "LLM judge agrees",
    "residual": "Few sentences left for the original label",
    "untouched": "Few sentences left as written",
}


def _judge(subject: Subject) -> Mapping[str, Any]:
    return subject.scores.get("judge") or {}


def label_flip(subject: Subject, criteria: CandidateFilter) -> Verdict:
    judge = _judge(subject)
    if not judge:
        return Verdict(SKIP, "not judged: no ensemble members")
    predicted = judge.get("predicted")
    if judge.get("flipped"):
        return Verdict(PASS, f"predicts {predicted} (mean P(target) {float(judge.get('target_prob', 0)):.2f})")
    return Verdict(FAIL, f"predicts {predicted}, not {subject.target}")


def soft_flip(subject: Subject, criteria: CandidateFilter) -> Verdict:
    judge = _judge(subject)
    if not judge:
        return Verdict(SKIP, "not judged: no ensemble members")
    predicted = judge.get("predicted")
    if judge.get("left_original"):
        return Verdict(PASS, f"predicts {predicted}, no longer {subject.original_label}")
    return Verdict(FAIL, f"still predicts {predicted}")


def agreement_shortfall(members: Mapping[str, Mapping[str, Any]], min_prob: float,
                        agreement: str = "each") -> tuple[dict[str, float], str]:
    """The members whose P(target) is below ``min_prob`` and count against the candidate.

    Parameters
    ----------
    members
        The judge's ``{member: {"target_prob", "dev_accuracy"?}}``.
    min_prob
        The least P(target) a counted member may give.
    agreement
        ``"each"``: every member counts. ``"best"``: only the member with the highest stored dev
        accuracy (ties: the first name in sort order); every member when one has no accuracy stored.

    Returns
    -------
    tuple
        ``({member: P(target)} below min_prob, "who counted" for a reason text)``.
    """
    probs = {name: float(m.get("target_prob", 0.0)) for name, m in members.items()}
    who = "every member"
    if agreement == "best" and probs:
        accuracy = {name: m.get("dev_accuracy") for name, m in members.items()}
        if all(isinstance(a, (int, float)) for a in accuracy.values()):
            best = sorted(probs, key=lambda n: (-float(accuracy[n]), n))[0]
            probs = {best: probs[best]}
            who = f"the most accurate member ({best}, dev {float(accuracy[best]):.2f})"
    return {name: p for name, p in probs.items() if p < min_prob}, who


def member_agreement(subject: Subject, criteria: CandidateFilter) -> Verdict:
    members = _judge(subject).get("members") or {}
    if not members:
        return Verdict(SKIP, "not judged: no ensemble members")
    low, who = agreement_shortfall(members, criteria.min_member_prob, getattr(criteria, "agreement", "each"))
    if low:
        return Verdict(FAIL, "P(target) below {:.2f}: ".format(criteria.min_member_prob)
                       + ", ".join(f"{n} {p:.2f}" for n, p in low.items())
                       + ("" if who == "every member" else " (the most accurate member)"))
    return Verdict(PASS, f"{who} ≥ {criteria.min_member_prob:.2f}")


def spurious_kept(subject: Subject, criteria: CandidateFilter) -> Verdict:
    keep = list(subject.meta.get("keep_words") or [])
    if not keep:
        return Verdict(SKIP, "no spurious words in the original")
    if "spurious_kept" not in subject.scores:
        return Verdict(SKIP, "not checked")
    missing = list(subject.scores.get("missing_spurious") or [])
    if missing:
        return Verdict(FAIL, "missing: " + ", ".join(missing))
    released = list(subject.scores.get("released_spurious") or [])
    if released:
        return Verdict(PASS, f"{len(keep) - len(released)} of {len(keep)} kept; released as opinion words: "
                       + ", ".join(released))
    return Verdict(PASS, f"all {len(keep)} kept")


def _each(subject: Subject, find: Callable[[str, str], str | None]) -> Verdict:
    for new, original in subject.pairs():
        problem = find(new, original)
        if problem:
            return Verdict(FAIL, problem)
    return Verdict(PASS)


def prompt_echo(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.prompt_echo)


@functools.cache
def _guard(mode: str) -> Any:
    from engine.counterbias.leak import LEAK_SOURCES, LeakGuard

    return LeakGuard.from_prompts(LEAK_SOURCES.get(mode) or LEAK_SOURCES["edit"])


def prompt_leak(subject: Subject, criteria: CandidateFilter) -> Verdict:
    guard = _guard(subject.mode)

    def find(new: str, original: str) -> str | None:
        leaked = guard.find(new, original)
        return f'copies "{leaked}" from the prompt\'s examples' if leaked else None

    return _each(subject, find)


def refusal(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.refusal)


def bare_label(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, lambda new, original: heuristics.bare_label(new, original, subject.labels))


def label_named(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, lambda new, original: heuristics.label_named(new, original, subject.labels))


def commentary(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.commentary)


def formatting(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.formatting)


def truncation(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.truncation)


def copy(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.copy)


def coined_word(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, lambda new, original: heuristics.coined_word(new, original, subject.vocabulary))


def repetition(subject: Subject, criteria: CandidateFilter) -> Verdict:
    return _each(subject, heuristics.repetition)


def rating(subject: Subject, criteria: CandidateFilter) -> Verdict:
    from engine.text.ratings import against, find_ratings

    if not subject.rating_sides:
        return Verdict(SKIP, "the dataset ties no label to a rating scale")
    found = [r for new, _ in subject.pairs() for r in find_ratings(new)]
    if not found:
        return Verdict(PASS, "no rating")
    for new, _ in subject.pairs():
        wrong = against(new, subject.target, subject.original_label, subject.rating_sides)
        if wrong:
            other = subject.original_label or "another label"
            return Verdict(FAIL, f'rates it "{wrong[0].text}", a rating that goes with {other}')
    return Verdict(PASS, ", ".join(f'"{r.text}"' for r in found) + " fits")


def pattern(subject: Subject, criteria: CandidateFilter) -> Verdict:
    spec = subject.meta.get("pattern")
    if not spec:
        return Verdict(SKIP, "no symbolic pattern for this candidate")
    try:
        from engine.patterns import matches  # type: ignore[attr-defined]
    except ImportError:
        return Verdict(SKIP, "pattern matching is not available")
    for new, _ in subject.pairs():
        if not matches(str(spec), new):
            return Verdict(FAIL, f"{spec} no longer matches")
    return Verdict(PASS, f"{spec} matches")


def llm_judge(subject: Subject, criteria: CandidateFilter) -> Verdict:
    answer = subject.scores.get("llm_judge")
    if not answer:
        return Verdict(SKIP, "not run (Verify with an LLM judge)")
    label = answer.get("label")
    if label is None:
        return Verdict(SKIP, f"no usable answer: {answer.get('error', 'unparsed')}")
    if label == subject.target:
        return Verdict(PASS, f"reads as {label}")
    return Verdict(FAIL, f"reads as {label}, not {subject.target}")


def residual_of(meta: Mapping[str, Any], scores: Mapping[str, Any]) -> list[str] | None:
    """The sentences of a candidate still read as its original label: by the LLM judge when it read them
    (``scores.residual``: the reading the analyst asked for last, possibly by a stronger model), else as recorded at
    generation (``meta.fields[].residual``); ``None`` when nobody read them.

    Examples
    --------
    >>> meta = {"fields": [{"field": "text", "residual": []}]}
    >>> residual_of(meta, {}), residual_of(meta, {"residual": {"sentences": ["A joy."], "model": "openai:big"}})
    ([], ['A joy.'])
    """
    judged = scores.get("residual")
    if isinstance(judged, Mapping):
        read = [judged.get("sentences") or []]
    else:
        read = [f.get("residual") or [] for f in meta.get("fields") or [] if isinstance(f, Mapping) and "residual" in f]
    return [str(s) for found in read for s in found] if read else None


def residual_within(left: Sequence[str], texts: Sequence[str], share: float) -> tuple[bool, int]:
    """Whether ``left`` (sentences still read as the original label) is at most ``share`` of the sentences of
    ``texts``, and that number of sentences.

    Examples
    --------
    >>> residual_within(["A joy."], ["It drags. A joy. It ends. Dull. Flat."], 0.2)
    (True, 5)
    """
    from engine.text.sentences import split_sentences

    total = max(len(left), sum(len(split_sentences(text or "")) for text in texts))
    return len(left) <= share * total, total


def residual(subject: Subject, criteria: CandidateFilter) -> Verdict:
    """Fails a candidate with more than ``criteria.max_residual_share`` of its sentences that the LLM, reading each
    alone, still reads as the original label (a partly flipped text: "This movie really blows" left in a review meant
    to be Positive). Recorded at generation by the LLM sentence reader (:mod:`engine.counterbias.sentence_reading`),
    read again by the LLM judge when it is asked (its reading then counts, and the reason names its model); skipped
    without a reading."""
    left = residual_of(subject.meta, subject.scores)
    if left is None:
        return Verdict(SKIP, "sentences not read (sentence reader llm, or Ask the LLM judge)")
    other = subject.original_label or "the original label"
    judged = subject.scores.get("residual")
    by = f" (read by the LLM judge, {judged['model']})" if isinstance(judged, Mapping) and judged.get("model") else ""
    if not left:
        return Verdict(PASS, "no sentence reads as " + other + by)
    allowed = float(getattr(criteria, "max_residual_share", 0.0))
    within, total = residual_within(left, [text for text, _ in subject.pairs()], allowed)
    quoted = "; ".join(f'"{s[:80]}"' for s in left[:2])
    counted = f"{len(left)} of {total} sentences still read{'s' * (len(left) == 1)} as {other}"
    if not within:
        return Verdict(FAIL, f"{counted} (at most {allowed:.0%} may){by}: {quoted}")
    return Verdict(PASS, f"{counted}, within the {allowed:.0%} allowed{by}: {quoted}")


def untouched_sentences(meta: Mapping[str, Any], original: str) -> tuple[int, int] | None:
    """``(sentences left as written, sentences)`` of an edit-mode candidate's ``text`` field (an edit, or a removal,
    touches its sentence); ``None`` for other candidates (reconstructed, guided, pairs).

    Examples
    --------
    >>> meta = {"mode": "edit", "fields": [{"field": "text", "edits": [{"index": 0, "new": "Bad."},
    ...                                                               {"index": 2, "new": None}]}]}
    >>> untouched_sentences(meta, "Good. It is long. A joy.")
    (2, 3)
    """
    from engine.text.sentences import split_sentences

    if meta.get("mode") != "edit":
        return None
    plans = [f for f in meta.get("fields") or [] if isinstance(f, Mapping) and f.get("field") == "text"]
    if not plans:
        return None
    total = len(split_sentences(original or ""))
    touched = {int(e.get("index", -1)) for e in plans[0].get("edits") or [] if e.get("new") is not None}
    return total - len(touched & set(range(total))), total


def untouched(subject: Subject, criteria: CandidateFilter) -> Verdict:
    """Fails an edit-mode candidate with more than ``criteria.max_untouched`` sentences left as written (neither
    edited nor removed): off by default (``None``: skipped). The sentences the reader took for plot or fact are the
    ones left, and on CAD most half-flipped candidates hid their leftover there (see
    :class:`engine.counterbias.verify.CandidateFilter`)."""
    allowed = getattr(criteria, "max_untouched", None)
    if allowed is None:
        return Verdict(SKIP, "off (verify --max-untouched N)")
    counted = untouched_sentences(subject.meta, subject.original.get("text") or "")
    if counted is None:
        return Verdict(SKIP, "not an edit of a single text")
    left, total = counted
    said = f"{left} of {total} sentences left as written"
    return Verdict(FAIL, f"{said} (at most {allowed} may)") if left > allowed else Verdict(PASS, said)


#: Checks that read the label the text expresses (a model or an LLM judge); the rest read its form.
LABEL_CHECKS = ("label-flip", "soft-flip", "member-agreement", "llm-judge", "residual")


def label_judged(verdicts: Mapping[str, Any]) -> bool:
    """Whether any check that reads the expressed label gave a verdict (not all skipped or absent).

    A candidate that passes only the form checks (no echo, no refusal, ...) has not been shown to
    express its target label; the GUI says "label not judged" instead of a bare pass.
    """
    def status(v: Any) -> str:
        return str(v.get("status") if isinstance(v, Mapping) else getattr(v, "status", ""))

    return any(status(verdicts[name]) in ("pass", "fail") for name in LABEL_CHECKS if name in verdicts)


def run_checks(subject: Subject, criteria: CandidateFilter, names: Sequence[str] | None = None) -> dict[str, Verdict]:
    """Every check of ``names`` (default: all registered) on ``subject``, in registry order."""
    return {name: CHECKS.get(name)(subject, criteria) for name in (names or CHECKS.names())}
