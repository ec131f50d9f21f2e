"""What the stages of an edit chunk share: the run's tools, the chunk's slots and sentence jobs, and the readings
that travel from one stage to the next."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.counterbias.edit import SentenceEdit
from engine.counterbias.manipulate import swap_gender
from engine.generation.plan import FieldPlan, Slot
from engine.llm.base import ChatRequest

if TYPE_CHECKING:
    from engine.counterbias.leak import LeakGuard
    from engine.generation.demos import DemoPool
    from engine.counterbias.opinion_words import OpinionFinder
    from engine.counterbias.phrase_swap import PhraseSwapper
    from engine.counterbias.sentence_reading import SentenceReader
    from engine.counterbias.settings import GenerateSettings
    from engine.llm.cache import CachedClient
    from engine.progress import CancelToken
    from engine.store.project import DatasetInfo

__all__ = ["EditKey", "EditRun", "Job", "PlanKey", "edit_key", "plan_key", "reread", "swapper"]

#: ``(example id, target, sample, field)``: one field of one slot.
PlanKey = tuple[int, str, int, str]
#: ``(example id, target, sample, field, sentence index)``: one sentence edit of a chunk.
EditKey = tuple[int, str, int, str, int]


def plan_key(slot: Slot, plan: FieldPlan) -> PlanKey:
    return (*slot.key, plan.field)


def edit_key(slot: Slot, plan: FieldPlan, edit: SentenceEdit) -> EditKey:
    return (*slot.key, plan.field, edit.index)


@dataclass(eq=False)
class Job:
    """One sentence to edit: its slot, field, edit and first request."""

    slot: Slot
    plan: FieldPlan
    edit: SentenceEdit
    request: ChatRequest

    @property
    def key(self) -> EditKey:
        return edit_key(self.slot, self.plan, self.edit)


@dataclass
class EditRun:
    """The state of one edit chunk, handed from stage to stage (:data:`engine.generation.edit.pipeline.EDIT_STAGES`).

    ``reader`` reads sentences alone (``None``: no reading); ``finder`` marks opinion words and ``swapper`` swaps
    phrases (``None``: off).
    """

    client: CachedClient
    dataset: DatasetInfo
    settings: GenerateSettings
    mapping: dict[str, str]
    token: CancelToken
    guard: LeakGuard
    slots: list[Slot]
    reader: SentenceReader | None = None
    finder: OpinionFinder | None = None
    swapper: PhraseSwapper | None = None
    #: The dataset's demonstrations (``None``: none, or ``demonstrations`` off): the first tries' few-shot examples.
    pool: DemoPool | None = None
    #: The sentences to edit, in slot order (after planning: only those of slots not failed).
    jobs: list[Job] = field(default_factory=list)
    #: ``plan_key -> (the text's base, its sentences' spans)`` of every planned field.
    layout: dict[PlanKey, tuple[str, list[tuple[int, int]]]] = field(default_factory=dict)
    #: Kept edits the reader still reads as unmoved, with their P(target): what the later tries work on.
    still: dict[EditKey, float] = field(default_factory=dict)
    #: The slots whose fields were all planned, once the candidates are built.
    live: list[Slot] = field(default_factory=list)
    #: LLM requests sent by each stage (cached answers included), added to over the chunks of a run.
    requests: dict[str, int] = field(default_factory=dict)
    #: Leak guards widened by the demonstrations an edit was shown, by their ids.
    guards: dict[tuple[str, ...], LeakGuard] = field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.settings.task_description(self.dataset.labels)

    @property
    def labels(self) -> list[str]:
        return self.dataset.labels

    def swapper_of(self, plan: FieldPlan) -> Callable[[str], str]:
        return swapper(plan, self.mapping)

    def guard_for(self, edit: SentenceEdit) -> LeakGuard:
        """The leak guard of an edit: the prompts' examples, and the demonstrations it was shown."""
        if not edit.demos:
            return self.guard
        ids = tuple(d["id"] for d in edit.demos)
        if ids not in self.guards:
            shown = [d for d in self.pool.demos if d.id in set(ids)] if self.pool is not None else []
            self.guards[ids] = self.guard.widened(t for d in shown for t in (d.before, d.sentence, d.after, d.edited))
        return self.guards[ids]


def swapper(plan: FieldPlan, mapping: dict[str, str]) -> Callable[[str], str]:
    """The gender swap of one field's sentences (none when the text names a person: ``names_person``)."""
    if not mapping or not plan.gender:
        return lambda text: text
    return lambda text: swap_gender(text, mapping)[0]


def reread(still: dict[EditKey, float], key: EditKey, p: float) -> None:
    """Record the reading of an edit's new answer: off ``still`` once it reads as the target at least as much as
    not (P ≥ 0.5), else still unmoved with that reading."""
    if p >= 0.5:
        still.pop(key, None)
    else:
        still[key] = float(p)
