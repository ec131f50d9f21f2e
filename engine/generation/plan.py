"""Planning of a generate run: the candidate slots still to make, their fields, resume and the seed rule."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.counterbias.edit import SentenceEdit, surface_words
from engine.counterbias.manipulate import categorize, matched_words, swap_gender
from engine.counterbias.settings import GenerateSettings, targets_for
from engine.counterbias.triple_store import load_triples
from engine.llm.guard import text_too_long
from engine.llm.triple_format import Triple

if TYPE_CHECKING:
    from engine.store.project import DatasetInfo, Project

__all__ = ["METHOD", "RETRY_TEMPERATURE", "FieldPlan", "Slot", "existing", "keep_words", "params", "plan_slots"]

#: The ``method`` of the candidates this package makes.
METHOD = "coba"

#: Least temperature of a retry after an unusable answer (at temperature 0 a new seed changes nothing).
RETRY_TEMPERATURE = 0.7


@dataclass
class FieldPlan:
    """One edited field of one slot, step by step (stored in the candidate's ``meta``)."""

    field: str
    original: str
    triples: list[Triple]
    categories: list[str]
    fallback: bool = False
    rewritten: list[Triple] = field(default_factory=list)
    swaps: list[tuple[str, str]] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    final: list[Triple] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    text: str | None = None
    sentence_of: list[int] = field(default_factory=list)
    principal: tuple[str, ...] = ()
    spurious: tuple[str, ...] = ()
    votes: dict[str, int] = field(default_factory=dict)
    keep: list[str] = field(default_factory=list)
    edits: list[SentenceEdit] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    flip: dict[str, Any] | None = None
    #: Sentences edited because the ensemble reads them alone as the original label (``edit_polar``).
    polar: list[int] = field(default_factory=list)
    #: Whether gendered words are swapped in this field (not when the text names a person).
    gender: bool = True
    #: Sentences of the finished text the sentence reader still reads as the original label (``None``: not read).
    residual: list[str] | None = None
    #: Sentences holding a principal word, not read as the original label, in which the LLM marked no opinion word:
    #: left as written.
    plain: list[int] = field(default_factory=list)

    @property
    def to_rewrite(self) -> list[int]:
        return [i for i, c in enumerate(self.categories) if c == "principal"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "triples": [list(t) for t in self.triples],
            "categories": self.categories,
            "fallback": self.fallback,
            "rewritten": [list(t) for t in self.rewritten],
            "gender_swaps": [list(s) for s in self.swaps],
            "order": self.order,
            "final_triples": [list(t) for t in self.final],
            "raw": [r[:4000] for r in self.raw],
            "keep": self.keep,
            "edits": [e.to_dict() for e in self.edits],
            "flip_repair": self.flip,
            "polar": self.polar,
            **({"plain": self.plain} if self.plain else {}),
            "gender_swapped": self.gender,
            **({"residual": self.residual} if self.residual is not None else {}),
        }


@dataclass
class Slot:
    """One candidate to make: example × target label × sample."""

    example: dict[str, Any]
    target: str
    sample: int
    fields: list[FieldPlan]
    keep_words: list[str]
    error: dict[str, Any] | None = None
    attempt: int = 0
    repairs: dict[str, int] = field(default_factory=dict)
    mode: str = "edit"
    #: How a text leans to the target label (the labels' word z-statistics), or ``None``.
    lean: Any = None
    #: Word z-statistics toward the example's own label: words to name when a sentence holds no principal word.
    cues: dict[str, float] = field(default_factory=dict)
    #: Which label goes with which end of a rating scale ("10/10"): :func:`~engine.text.ratings.rating_sides`.
    sides: dict[str, str] = field(default_factory=dict)
    #: The dataset's words, accepted besides the English word list when an edit's new words are looked up.
    vocabulary: frozenset[str] = frozenset()
    #: Word z-statistics toward the target label: principal words this high already speak for it.
    target_z: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple[int, str, int]:
        """``(example id, target, sample)``: unique among the slots of a run."""
        return (int(self.example["id"]), self.target, self.sample)

    def fail(self, step: str, message: str, *, retriable: bool, hint: str = "", quality: bool = False,
             reason: str = "") -> None:
        """Record the first failure; ``quality``: the LLM answered, but unusably (a retry varies the seed).

        ``reason`` is a short key (``"missing words"``, ``"prompt leak"``, ``"unchanged"``, …).
        """
        if self.error is None:
            self.error = {"step": step, "message": message, "hint": hint, "retriable": retriable,
                          "quality": quality, "reason": reason or ("transport" if not quality else "unusable")}

    def repaired(self, kind: str, n: int = 1) -> None:
        self.repairs[kind] = self.repairs.get(kind, 0) + n


def plan_slots(project: Project, dataset: DatasetInfo, ids: Sequence[int], votes: dict, settings: GenerateSettings,
               key: str, fields: Sequence[str]) -> tuple[list[Slot], int]:
    """Slots still to make (failed ones again), and how many already exist."""
    stored_slots = existing(project, ids, key)
    slots: list[Slot] = []
    skipped = 0
    for row in project.examples(ids):
        stored = load_triples(project, int(row["id"])) if settings.uses_triples else {}
        for target in targets_for(row["label"], dataset.labels, settings.targets):
            for sample in range(settings.samples):
                status, attempt, quality = stored_slots.get((int(row["id"]), target, sample), (None, 0, False))
                if status not in (None, "failed"):
                    skipped += 1
                    continue
                # after an unusable answer the same request would only hit the cache: vary it
                slot = Slot(row, target, sample, [], [], attempt=attempt + 1 if quality else attempt,
                            mode=settings.mode)
                for name in fields:
                    sentences = stored.get(name, [])
                    triples = [t for sentence in sentences for t in sentence]
                    vote = votes.get((int(row["id"]), name))
                    plan = FieldPlan(name, row.get(name) or "", triples, [],
                                     sentence_of=[i for i, sentence in enumerate(sentences) for _ in sentence])
                    slot.fields.append(plan)
                    if too_long := text_too_long(plan.original):  # an edit of it would not be meaningful
                        slot.fail("input", f"Example {row['id']} ({name}): {too_long}", retriable=False,
                                  hint="Shorten or split this text; the other examples are generated.", reason="too long")
                        continue
                    if vote is None:
                        slot.fail("vote", f"Example {row['id']} ({name}) has no principal/spurious words yet.",
                                  retriable=True, hint="Explain these examples (vote) and generate again.")
                        continue
                    if not triples and settings.uses_triples:
                        slot.fail("triples", f"Example {row['id']} ({name}) has no triples.", retriable=True,
                                  hint="The triple step failed for it; generate again to retry.")
                        continue
                    plan.principal, plan.spurious = tuple(vote.principal), tuple(vote.spurious)
                    plan.votes = dict(vote.votes)
                    plan.categories = categorize(triples, vote.principal, vote.spurious)
                    if triples and "principal" not in plan.categories:
                        plan.fallback = True
                        plan.categories = ["principal" if c == "normal" else c for c in plan.categories]
                        if "principal" not in plan.categories:  # only spurious triples: rewrite them all
                            plan.categories = ["principal"] * len(triples)
                    slot.keep_words.extend(matched_words(plan.original, vote.spurious))
                slot.keep_words = list(dict.fromkeys(slot.keep_words))
                slots.append(slot)
    return slots, skipped


def existing(project: Project, ids: Sequence[int], key: str) -> dict[tuple[int, str, int], tuple[str, int, bool]]:
    """``(example, target, sample) -> (status, attempt, failed on an unusable answer)`` of stored slots."""
    rows = project.db.execute(
        "SELECT example_id, target_label, json_extract(meta, '$.sample') AS sample, status, "
        "json_extract(meta, '$.attempt'), json_extract(meta, '$.error.quality') FROM candidates "
        "WHERE method = ? AND json_extract(meta, '$.settings_key') = ? "
        "AND example_id IN (SELECT value FROM json_each(?))",
        (METHOD, key, json.dumps([int(i) for i in ids])),
    ).fetchall()
    return {(int(r[0]), r[1], int(r[2] or 0)): (r[3], int(r[4] or 0), bool(r[5])) for r in rows}


def params(settings: GenerateSettings, slot: Slot) -> dict[str, Any]:
    """Sampling of a slot's requests: sample ``i`` uses ``seed + i``; retry ``n`` adds ``1000 n``."""
    temperature = settings.temperature if slot.attempt == 0 else max(settings.temperature, RETRY_TEMPERATURE)
    return {"temperature": temperature, "seed": settings.seed + slot.sample + 1000 * slot.attempt,
            "max_tokens": settings.max_tokens}


def keep_words(text: str, plan: FieldPlan, mapping: dict[str, str]) -> list[str]:
    """The spurious words of ``text`` as written there (gender-swapped when swapping), principal ones excepted."""
    principal = {w.lower() for w in surface_words(text, plan.principal)}
    # a gendered word is swapped as it reads in its sentence ("her sister" -> "his", "told her" -> "him"),
    # not alone: the swap of the whole text says what each occurrence became
    in_context: dict[str, str] = {}
    if mapping:
        for a, b in swap_gender(text, mapping)[1]:
            in_context.setdefault(a, b)
    out = []
    for word in surface_words(text, plan.spurious):
        if word.lower() not in principal:
            out.append(in_context.get(word, swap_gender(word, mapping)[0]) if mapping else word)
    return out
