"""Stages ``build`` and ``flip``: the candidate is the original with its edited sentences replaced; a half-flipped
candidate gets one repair per affected sentence (``GenerateSettings.repair_flip``)."""

from __future__ import annotations

from engine.counterbias.edit import FUNCTION_WORDS, SentenceEdit, assemble, has_word, surface_words
from engine.generation.edit.request import backward, read_answer
from engine.generation.edit.select import content_words
from engine.generation.edit.state import EditRun, edit_key, plan_key
from engine.generation.plan import FieldPlan, Slot, params
from engine.llm.base import ChatRequest, Failure
from engine.llm.prompts import load_prompt

__all__ = ["PROMPTS", "STRONGEST", "build", "flip_repair"]

PROMPTS = ("edit_flip_repair",)

#: Principal words counted as the strongest: those with the most votes, at most this many.
STRONGEST = 3


def build(run: EditRun) -> None:
    """Assemble the candidate of every slot whose fields were all planned (``run.live``)."""
    run.live = [s for s in run.slots if s.error is None and all(plan_key(s, p) in run.layout for p in s.fields)]
    for slot in run.live:
        _build(run, slot)


def flip_repair(run: EditRun) -> None:
    """Repair the half-flipped candidates (:func:`_repair_flips`) and assemble them again."""
    if not run.live:
        return
    _repair_flips(run, run.live)
    for slot in run.live:
        _build(run, slot)


def _build(run: EditRun, slot: Slot) -> None:
    for plan in slot.fields:
        base, spans = run.layout[plan_key(slot, plan)]
        plan.text = assemble(base, spans, {e.index: e.new for e in plan.edits if e.new is not None},
                             other=run.swapper_of(plan))


def _strongest(plan: FieldPlan) -> list[str]:
    """The principal words with the most votes (at most :data:`STRONGEST`), in vote order."""
    if not plan.principal:
        return []
    content = content_words(plan.principal)
    top = max((plan.votes.get(w, 0) for w in content), default=0)
    return [w for w in content if plan.votes.get(w, 0) == top][:STRONGEST]


def _repair_flips(run: EditRun, slots: list[Slot]) -> None:
    """One repair for half-flipped candidates: strongest principal words left, or judged as the original label.

    A repaired sentence replaces the edit only if it passes the sentence checks and, with the reader
    (``settings.edit_moved`` > 0), does not read less as the target than the edit it replaces.
    """
    label_fn, settings = run.label_fn, run.settings
    judged = label_fn([{**{k: s.example.get(k) for k in ("text", "premise", "hypothesis")},
                        **{p.field: p.text for p in s.fields}} for s in slots]) if label_fn else [None] * len(slots)
    repair = load_prompt("edit_flip_repair")
    jobs = []
    for slot, label in zip(slots, judged, strict=True):
        original_label = str(slot.example["label"])
        for plan in slot.fields:
            strongest = {w.lower() for w in surface_words(plan.original, _strongest(plan))}
            left = {e.index: [w for w in e.change if w.lower() in strongest and e.new and has_word(e.new, w)]
                    for e in plan.edits}
            words = sorted({w for ws in left.values() for w in ws})
            as_original = label is not None and label == original_label
            if not words and not as_original:
                continue
            why = []
            if words:
                why.append("The words " + ", ".join(f'"{w}"' for w in words) + " are still there.")
            if as_original:
                why.append(f"A classifier still reads it as {original_label}.")
            plan.flip = {"words": words, "judged": label, "repaired": [], "rejected": []}
            targets = [e for e in plan.edits if left[e.index]] or [e for e in plan.edits if e.new]
            for edit in targets:
                named = left[edit.index] or [w for w in edit.change if w.lower() not in FUNCTION_WORDS]
                edit.messages = [*edit.messages, {"role": "assistant", "content": edit.raw[-1] if edit.raw else ""},
                                 *repair.render(label=original_label, why=" ".join(why), words=", ".join(f'"{w}"' for w in named)
                                                or "the words that carry the opinion", target=slot.target,
                                                keep=", ".join(edit.keep) or "(none)")]
                jobs.append((slot, plan, edit, ChatRequest(edit.messages, params(settings, slot))))
    if not jobs:
        return
    answers = run.client.chat_many([j[3] for j in jobs], cancel=run.token).results
    usable: list[tuple[Slot, FieldPlan, SentenceEdit, str]] = []
    for (slot, plan, edit, _), answer in zip(jobs, answers, strict=True):
        slot.repairs["flip"] = 1
        if isinstance(answer, Failure):  # like any other request: the slot fails, the next run retries it
            slot.fail("flip repair", answer.message, retriable=answer.retriable, hint=answer.hint)
            continue
        new, problem = read_answer(run, slot, plan, edit, answer)
        if problem is None and new != edit.answer:
            usable.append((slot, plan, edit, new))
        else:
            plan.flip["rejected"].append({"sentence": edit.index,
                                          "reason": problem.reason if problem else "unchanged"})
    wrong = backward(usable, run.reader) if settings.edit_moved > 0 else set()
    for slot, plan, edit, new in usable:
        if edit_key(slot, plan, edit) in wrong:
            plan.flip["rejected"].append({"sentence": edit.index, "reason": "wrong direction"})
            continue
        edit.answer, edit.new = new, run.swapper_of(plan)(new)
        plan.flip["repaired"].append(edit.index)
