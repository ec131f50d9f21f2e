"""Stages ``drop``, ``remove`` and ``unedited``: what is left after every try — an unmoved edit is dropped, a
stubborn sentence removed (``GenerateSettings.edit_remove``), a slot with no edited sentence failed."""

from __future__ import annotations

from engine.counterbias.edit import has_word
from engine.generation.edit.state import EditRun, plan_key
from engine.generation.plan import Slot

__all__ = ["REMOVE_SHARE", "drop_unmoved", "fail_unedited", "remove_stubborn"]

#: At most this share of a text's sentences is removed (``GenerateSettings.edit_remove``); a text with more stubborn
#: sentences keeps them all, and the residual check judges it.
REMOVE_SHARE = 1 / 3


def drop_unmoved(run: EditRun) -> None:
    """Edits that still read as unmoved after every try (``run.still``) are dropped: the sentence stays as written.

    Such an edit is a synonym where the opposite was asked: it leaves the sentence speaking for the original label,
    so it only makes the candidate less minimal, and it may take a released word with it.
    """
    for job in run.jobs:
        slot, plan, edit = job.slot, job.plan, job.edit
        if job.key in run.still and edit.new is not None and slot.error is None:
            edit.answer = edit.new = None
            edit.problems.append("unmoved, dropped")
            edit.failure = (f"Sentence {edit.index + 1} of the {plan.field}: every edit still read as "
                            f"{slot.example['label']} (sentence reader), so the sentence stays as it was.")


def remove_stubborn(run: EditRun) -> None:
    """Remove the sentences the reader read as the original label that still have no usable edit after every try:
    left in, such a sentence keeps a review half flipped. A sentence goes only when it holds no word to keep (its
    spurious, gendered and fact words), another sentence of the text has an edit, and at most :data:`REMOVE_SHARE`
    of the text's sentences go."""
    for slot in run.slots:
        if slot.error is not None:
            continue
        for plan in slot.fields:
            if plan.field != "text" or plan_key(slot, plan) not in run.layout:
                continue
            polar = set(plan.polar)
            spurious = [w for w in plan.spurious if w.strip()]
            stuck = [e for e in plan.edits if e.index in polar and e.new is None and not e.keep
                     and not any(has_word(e.sentence, w) for w in spurious if w not in e.released)]
            total = len(run.layout[plan_key(slot, plan)][1])
            if not stuck or not any(e.new for e in plan.edits) or len(stuck) > total * REMOVE_SHARE:
                continue
            for edit in stuck:
                edit.new, edit.removed, edit.failure = "", True, None
                edit.problems.append("removed")
            slot.repaired("remove", len(stuck))


def fail_unedited(run: EditRun) -> None:
    """Fail each slot with sentences to edit none of which could be edited, with the first sentence's reason."""
    for slot in {j.slot.key: j.slot for j in run.jobs}.values():
        _fail_unedited(slot)


def _fail_unedited(slot: Slot) -> None:
    if slot.error is not None:
        return
    edits = [e for p in slot.fields for e in p.edits]
    if not edits or any(e.new is not None for e in edits):
        return
    first = next((e for e in edits if e.failure), None)
    if first is None:
        return
    slot.fail("edit", first.failure, retriable=True, quality=True, reason=first.problems[-1] if first.problems else "",
              hint="Generate again (a retry samples anew), or use a stronger model.")
