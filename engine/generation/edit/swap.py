"""Stage ``swap``: the last try for a sentence with marked opinion words that has no usable edit or whose kept edit
is still unmoved — each marked phrase replaced by its opposite (``GenerateSettings.edit_swap``)."""

from __future__ import annotations

from engine.counterbias.edit import SentenceEdit
from engine.counterbias.phrase_swap import PhraseSwapper, swap_phrases
from engine.generation.edit.request import check_edit
from engine.generation.edit.state import EditKey, EditRun, reread
from engine.generation.plan import FieldPlan, Slot

__all__ = ["PROMPTS", "phrase_swaps"]

PROMPTS = (PhraseSwapper.prompt_name,)


def phrase_swaps(run: EditRun) -> None:
    """Each marked phrase of the sentence is replaced, in the sentence as written, by the words the LLM gives for its
    opposite (:mod:`engine.counterbias.phrase_swap`); every other byte stays.

    The swapped sentence passes the same checks as any edit and replaces what the sentence had only when the
    reader reads it more as the target (than the kept edit, or than the sentence). The replacements are recorded in
    the edit's ``swapped``. A request lost in transport fails the slot retriably, like any edit request.
    ``run.still`` is updated.
    """
    swapper, reader, still = run.swapper, run.reader, run.still
    if swapper is None or reader is None:
        return
    left = dict(still)
    todo = [(j.key, j.slot, j.plan, j.edit) for j in run.jobs
            if j.slot.error is None and j.plan.field == "text" and j.edit.opinion
            and ((j.edit.new is None and j.edit.failure) or (j.edit.new is not None and j.key in still))]
    if not todo:
        return
    asks = {key: [(edit.sentence, phrase, str(slot.example["label"]), slot.target) for phrase in edit.opinion]
            for key, slot, _, edit in todo}
    found = dict(zip((a for mine in asks.values() for a in mine),
                     swapper.swap([a for mine in asks.values() for a in mine]), strict=True))
    tried: list[tuple[EditKey, Slot, FieldPlan, SentenceEdit, str, dict[str, str]]] = []
    for key, slot, plan, edit in todo:
        lost = next((swapper.failed[a] for a in asks[key] if a in swapper.failed), None)
        if lost is not None:
            slot.fail("edit", lost.message, retriable=lost.retriable, hint=lost.hint)
            continue
        replacements = {a[1]: found[a] for a in asks[key] if found[a]}
        if not replacements:
            edit.problems.append("no swap")
            continue
        new = swap_phrases(edit.sentence, replacements)
        problem = check_edit(run, slot, plan, edit, new)
        if problem is not None:
            edit.problems.append(f"swap: {problem.reason}")
            continue
        tried.append((key, slot, plan, edit, new, replacements))
    for target in {t[1].target for t in tried}:
        items = [t for t in tried if t[1].target == target]
        fresh = [t for t in items if t[0] not in still]  # no usable edit: compared with the sentence itself
        probs = reader([t[4] for t in items] + [t[3].sentence for t in fresh], target)
        before = dict(zip((t[0] for t in fresh), probs[len(items):], strict=True))
        for (key, slot, plan, edit, new, replacements), p in zip(items, probs[: len(items)], strict=True):
            if p > still.get(key, before.get(key, float("nan"))):  # NaN: no verdict, nothing changes
                slot.repaired("swap")
                edit.answer, edit.new, edit.failure = new, run.swapper_of(plan)(new), None
                edit.swapped = replacements
                reread(left, key, p)
            else:
                edit.problems.append("swap kept out")
    run.still = left
