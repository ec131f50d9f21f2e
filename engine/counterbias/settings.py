"""Settings of counterbias generation, and which target labels an example gets."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import CounterbiasError

__all__ = ["MODES", "GenerateSettings", "GenerationConfigError", "candidate_fields", "edited_field", "targets_for"]

#: Generation modes: edit-preserving (default) and the paper's full reconstruction.
MODES = ("edit", "reconstruct")


class GenerationConfigError(CounterbiasError):
    """Counterbias generation cannot start with these settings or this project state."""

    code = "CB801"


@dataclass(frozen=True)
class GenerateSettings:
    """How counterbias candidates are made (CoBA).

    Parameters
    ----------
    mode
        ``"edit"`` (default): edit-preserving — only the sentences holding a principal word
        (see ``edit_polar`` and ``edit_triples`` for the others) are rewritten, one LLM request each, and every other sentence is kept byte for byte
        (up to the gender swap); ``"reconstruct"``: the paper's full reconstruction (rewrite the
        principal triples, shuffle/drop normal ones, write the whole text from the triples).
        Both check that the spurious words survive.
    repair_flip
        Edit mode: a candidate still reading as the original label (its strongest principal
        words still there, or the ensemble judging it as the original label) gets one repair
        request naming the remaining words before it is stored.
    targets
        ``"other"``: binary tasks get the other label, multi-class tasks every other label
        (same as ``"each"``); ``"each"``; or a comma-separated list of label names.
    samples
        Candidates per example and target (``N``); sample ``i`` uses seed ``seed + i``.
    temperature, seed, max_tokens
        Sampling of the rewrite and reconstruct calls.
    shuffle, drop_prob
        Reconstruct mode: shuffle the normal triples; drop each with this probability (seeded
        per candidate).
    swap_gender
        Swap gendered words with the bundled pair lists — except in a text that names a person
        (spaCy's entity recogniser), whose gendered words mostly refer to the people it names.
    fields
        Text fields to edit: ``None`` edits ``text`` (single) or ``hypothesis`` (pairs; the
        premise is kept as the context that the new hypothesis must relate to differently).
    task
        A short task description for the prompts (default: guessed from the labels).
    edit_polar
        Edit mode: also edit every sentence that the sentence reader, reading it alone, gives the
        original label with at least this score, even when it holds no principal word (``0``: off; any
        length with the LLM reader, three words or more with the members, who misread short ones).
        Human editors change every sentence that carries the label; a review whose other opinionated
        sentences stay as they were keeps its label.
    edit_moved
        Edit mode: an edited sentence that the ensemble, reading it alone, still does not give the
        target (mean probability below 0.5) and whose target probability rose by less than this
        gets one repair request saying so — a small model often answers a synonym ("tired" →
        "weary") where the opposite was asked; the repair is kept only when it reads more as the
        target, and an edit that still reads less as the target than the sentence did is dropped
        (the sentence stays), as is one still unmoved after every try (``edit_fresh``, ``edit_swap``).
        With it, the members' reading replaces the cruder word z-statistics test of direction
        (``0``: off, and the z test is used). Needs the judge members.
    edit_fresh
        Edit mode: a sentence whose edit and repair were both unusable (or dropped as moving the
        wrong way), or whose kept edit the members still read as unmoved (``edit_moved``), gets
        one more request: the first prompt again, in a fresh conversation with a new seed; an
        unmoved edit is replaced only by an answer that reads more as the target. About one
        sentence in four with the bundled model; ``False`` saves those requests.
    edit_opinion
        Edit mode: for each sentence the sentence reader reads as the original label (``edit_polar``), ask
        the LLM once which words make it do so (:mod:`engine.counterbias.opinion_words`); they are named to
        change instead of the principal words, and a spurious word among them is released (the edit may
        change it; recorded, and not held against the candidate). ``False``: principal words only.
    edit_hold
        Edit mode with ``edit_opinion``: a spurious word inside the marked opinion words is not released at
        once. The sentence is first edited with it kept verbatim and the opinion turned around it (prompt
        ``edit_sentence_hold``: "hardly a heartfelt movie", "never shines"), as a counterbias example needs —
        the word stays while the label flips. That edit is the sentence's when it passes the checks and the
        sentence reader reads it as the target (after one repair if not); otherwise the word is released and the
        sentence is edited as without this setting (the same requests). One or two more requests per such sentence;
        ``False`` releases at once.
    edit_swap
        Edit mode with ``edit_opinion``: a sentence with marked opinion words that still has no usable edit after
        every try, or whose edit still reads below 0.5 as the target, gets one phrase swap
        (:mod:`engine.counterbias.phrase_swap`): the LLM gives the opposite of each marked phrase, the phrases are
        replaced in the sentence as written, and the result is kept when it passes the checks and reads more as
        the target. ``False`` saves those requests.
    edit_remove
        Edit mode: a sentence the sentence reader read as the original label whose every edit was unusable
        or still read as that label ("Very recommendable.", "This picture is a real can't-miss!!!" — a small
        model sends them back unchanged or as synonyms) is removed from the candidate, as human editors often do,
        when it holds no word to keep (spurious, gendered, names and facts), another sentence of the text was
        edited, and at most a third of the text's sentences go. Recorded in the edit (``removed``). ``False``: such
        a sentence stays as written, and the residual check counts it.
    edit_triples
        Edit mode: also extract the LLM's fact triples of every sentence (one request per sentence,
        as CoBA's reconstruction needs) and edit the sentences holding a principal triple besides
        those holding a principal content word; when no triple holds a principal word, every
        sentence with a triple is edited (``fallback``). Off by default: sentences are chosen by
        their principal words, ratings and the sentence reader, and no triple request is sent.
    sentence_reader
        Edit mode: who reads single sentences for ``edit_polar``, ``edit_moved`` and the residual
        check (:mod:`engine.counterbias.sentence_reading`): ``"llm"`` (default; the generating LLM,
        one short cached request per distinct sentence, needs no members) or ``"members"`` (the
        judge members, trained on whole texts; no residual check).
    """

    mode: str = "edit"
    repair_flip: bool = True
    targets: str = "other"
    samples: int = 1
    temperature: float = 0.7
    seed: int = 13
    max_tokens: int = 384
    shuffle: bool = True
    drop_prob: float = 0.1
    swap_gender: bool = True
    fields: tuple[str, ...] | None = None
    task: str | None = None
    edit_polar: float = 0.8
    edit_moved: float = 0.25
    edit_fresh: bool = True
    edit_opinion: bool = True
    edit_hold: bool = True
    edit_swap: bool = True
    edit_remove: bool = True
    edit_triples: bool = False
    sentence_reader: str = "llm"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise GenerationConfigError(f"Unknown generation mode {self.mode!r}.", "Use 'edit' or 'reconstruct'.")
        if self.samples < 1 or self.samples > 50:
            raise GenerationConfigError(f"samples must be 1-50, got {self.samples}.", "Use e.g. 1 to 5 samples.")
        if not 0.0 <= self.drop_prob < 1.0:
            raise GenerationConfigError(f"drop_prob {self.drop_prob} is out of range.", "Use a value in [0, 1), e.g. 0.1.")
        if not 0.0 <= self.temperature <= 2.0:
            raise GenerationConfigError(f"temperature {self.temperature} is out of range.", "Use 0 to 2.")
        if not 0.0 <= self.edit_polar <= 1.0:
            raise GenerationConfigError(f"edit_polar {self.edit_polar} is out of range.",
                                        "Use a probability in [0, 1], e.g. 0.8, or 0 to turn it off.")
        if not 0.0 <= self.edit_moved <= 1.0:
            raise GenerationConfigError(f"edit_moved {self.edit_moved} is out of range.",
                                        "Use a probability gain in [0, 1], e.g. 0.25, or 0 to turn it off.")
        from engine.counterbias.sentence_reading import SENTENCE_READERS

        if self.sentence_reader not in SENTENCE_READERS:
            raise GenerationConfigError(f"Unknown sentence reader {self.sentence_reader!r}.",
                                        "Use one of: " + ", ".join(SENTENCE_READERS.names()) + ".")
        if self.fields is not None:
            object.__setattr__(self, "fields", tuple(self.fields))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerateSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def key(self) -> str:
        """Identity of what is generated (16 hex digits): resume skips candidates with this key."""
        raw = json.dumps(self.to_dict(), sort_keys=True, default=list)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    @property
    def uses_triples(self) -> bool:
        """Whether generation needs the examples' fact triples (reconstruct mode, or edit mode with ``edit_triples``)."""
        return self.mode == "reconstruct" or self.edit_triples

    def edit_fields(self, task: str) -> tuple[str, ...]:
        if self.fields:
            allowed = ("premise", "hypothesis") if task == "pair" else ("text",)
            bad = [f for f in self.fields if f not in allowed]
            if bad:
                raise GenerationConfigError(f"Cannot edit field(s) {bad} of a {task} dataset.",
                                            f"Choose among: {', '.join(allowed)}.")
            return self.fields
        return ("hypothesis",) if task == "pair" else ("text",)

    def task_description(self, labels: Sequence[str]) -> str:
        if self.task:
            return self.task
        lower = {label.lower() for label in labels}
        if lower & {"entailment", "contradiction", "neutral"}:
            return "natural language inference: how the hypothesis relates to the premise"
        if lower & {"positive", "negative", "pos", "neg"}:
            return "sentiment of a review"
        return "text classification"


def edited_field(task: str) -> str:
    """The field a one-field edit (guided, pattern-keeping) changes: ``text``, or a pair's ``hypothesis``.

    The premise of a pair stays as written: it is the context the new hypothesis relates to.
    """
    return "hypothesis" if task == "pair" else "text"


def candidate_fields(edited: str, new: str | None, example: Mapping[str, Any]) -> tuple[str | None, ...]:
    """``(text, premise, hypothesis)`` of a candidate whose field ``edited`` became ``new``.

    A pair candidate keeps the original premise beside its new hypothesis (``None`` hypothesis
    for a failed one); a single-text candidate has only ``text``.

    Examples
    --------
    >>> candidate_fields("text", "A dull film.", {"text": "A fine film."})
    ('A dull film.', None, None)
    >>> candidate_fields("hypothesis", "Nobody sings.", {"premise": "A girl sings.", "hypothesis": "A girl sings."})
    (None, 'A girl sings.', 'Nobody sings.')
    """
    if edited == "text":
        return new, None, None
    return None, example.get("premise"), new


def targets_for(label: str, labels: Sequence[str], targets: str) -> list[str]:
    """Target labels for an example with gold ``label``.

    Raises
    ------
    GenerationConfigError
        A named target is not one of the dataset's labels.
    """
    others = [lab for lab in labels if lab != label]
    if targets in ("other", "each"):
        return others
    wanted = [t.strip() for t in targets.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in labels]
    if unknown:
        raise GenerationConfigError(f"Target label(s) {unknown} are not in the dataset's labels {list(labels)}.",
                                    "Use 'other', 'each', or some of the dataset's labels.")
    return [t for t in wanted if t != label]
