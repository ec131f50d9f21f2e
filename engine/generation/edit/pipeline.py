"""The edit method as an ordered list of stages (:data:`EDIT_STAGES`), each ``stage(run) -> None`` on the chunk's
:class:`~engine.generation.edit.state.EditRun`, each on when its option of
:class:`~engine.counterbias.settings.GenerateSettings` is (``option=None``: always)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.counterbias.opinion_words import OpinionFinder
from engine.counterbias.sentence_reading import READER_PROMPTS
from engine.counterbias.settings import GenerateSettings
from engine.generation.edit import build, drop, first, fresh, residual, select, swap
from engine.generation.edit.state import EditRun

__all__ = ["EDIT_STAGES", "Stage", "edit_prompts", "run_edit_chunk"]


@dataclass(frozen=True)
class Stage:
    """One step of the edit method.

    ``option``: the setting that turns it on (``None``: always on); ``needs``: other settings it does nothing
    without; ``reader``: whether it needs the sentence reader (a text field); ``prompts``: the prompts it may send.
    """

    name: str
    fn: Callable[[EditRun], None]
    option: str | None = None
    prompts: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    reader: bool = False

    def enabled(self, settings: GenerateSettings) -> bool:
        return all(bool(getattr(settings, name)) for name in (*((self.option,) if self.option else ()), *self.needs))


#: The edit method, in order.
EDIT_STAGES: tuple[Stage, ...] = (
    Stage("read", select.read_sentences, "edit_polar", reader=True),
    Stage("mark", select.mark_opinions, "edit_opinion", (OpinionFinder.prompt_name,), reader=True),
    Stage("plan", select.plan_chunk),
    Stage("first", first.first_tries, prompts=first.PROMPTS),
    Stage("fresh", fresh.fresh_tries, "edit_fresh", fresh.PROMPTS),
    Stage("swap", swap.phrase_swaps, "edit_swap", swap.PROMPTS, needs=("edit_opinion",), reader=True),
    Stage("drop", drop.drop_unmoved),
    Stage("remove", drop.remove_stubborn, "edit_remove"),
    Stage("unedited", drop.fail_unedited),
    Stage("build", build.build),
    Stage("residual", residual.record_residual, reader=True),
    Stage("unread", residual.fail_unread, reader=True),
)


def run_edit_chunk(run: EditRun, stages: Sequence[Stage] = EDIT_STAGES) -> None:
    """Walk the enabled stages over one chunk of slots, adding the LLM requests each sends (answered from the cache
    or not) to ``run.requests``."""
    for stage in stages:
        if stage.enabled(run.settings):
            before = run.client.total.sent + run.client.total.hits
            stage.fn(run)
            spent = run.client.total.sent + run.client.total.hits - before
            if spent:
                run.requests[stage.name] = run.requests.get(stage.name, 0) + spent


def edit_prompts(settings: GenerateSettings, fields: Sequence[str]) -> tuple[str, ...]:
    """The prompts an edit run with ``settings`` on ``fields`` may send: those of its enabled stages (a stage that
    needs the sentence reader only with a text field), and the reader's own."""
    text = "text" in fields
    names = [p for stage in EDIT_STAGES if stage.enabled(settings) and (text or not stage.reader) for p in stage.prompts]
    if text:
        names.extend(READER_PROMPTS.get(settings.sentence_reader, ()))
    return tuple(dict.fromkeys(names))
