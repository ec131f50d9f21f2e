"""Stage ``first``: one request per sentence, one repair naming what was wrong — or, for a usable edit the reader
does not see move toward the target (``edit_moved``), saying so; the repair of an unmoved edit is kept only if it
reads more as the target (:func:`_settle`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.counterbias.edit import FUNCTION_WORDS, SentenceEdit
from engine.generation.edit.request import WRONG_WAY, take_edit
from engine.generation.edit.select import CUE_Z
from engine.generation.edit.state import EditKey, EditRun, edit_key
from engine.generation.plan import FieldPlan, Slot
from engine.llm.base import ChatRequest
from engine.llm.prompts import load_prompt
from engine.text import segment
from engine.text.ratings import against

__all__ = ["PROMPTS", "first_tries", "unmoved"]

PROMPTS = ("edit_sentence", "edit_sentence_repair")


def first_tries(run: EditRun) -> None:
    """Send the first request of every sentence, and one repair of each unusable or unmoved
    answer; the kept edits still unmoved after that go to ``run.still``."""
    rest = [j for j in run.jobs if j.slot.error is None]
    answers = run.client.chat_many([j.request for j in rest], cancel=run.token).results
    retry = []
    for job, answer in zip(rest, answers, strict=True):
        slot, plan, edit, request = job.slot, job.plan, job.edit, job.request
        edit.messages = list(request.messages)
        problem = take_edit(run, slot, plan, edit, answer, final=False)
        if problem:
            retry.append((job, answer, problem))
    # a usable edit that still reads as the original label (a synonym where the opposite was asked) is
    # repaired too; its first edit stays unless the repair reads more as the target
    found = unmoved([(j.slot, j.plan, j.edit) for j in rest if j.edit.answer is not None], run.reader,
                    run.settings.edit_moved)
    retry += [(job, answer, found[job.key][0]) for job, answer in zip(rest, answers, strict=True) if job.key in found]
    if not retry:
        return
    repair = load_prompt("edit_sentence_repair")
    requests = []
    for job, answer, problem in retry:
        job.slot.repaired("edit")
        job.edit.messages = [*job.request.messages, {"role": "assistant", "content": answer.text},
                             *repair.render(problem=problem, target=job.slot.target,
                                            keep=", ".join(job.edit.keep) or "(none)")]
        requests.append(ChatRequest(job.edit.messages, job.request.params))
    second = run.client.chat_many(requests, cancel=run.token).results
    firsts = {}
    for (job, _, _), answer in zip(retry, second, strict=True):
        first = (job.edit.answer, job.edit.new) if job.key in found else None
        take_edit(run, job.slot, job.plan, job.edit, answer, final=first is None)
        if first is not None:
            firsts[job.key] = (job.slot, job.edit, first, found[job.key][1])
    if firsts:
        run.still = _settle(firsts, run.reader, run.settings.edit_moved)


def unmoved(done: Sequence[tuple[Slot, FieldPlan, SentenceEdit]], polar_fn: Any,
            min_gain: float) -> dict[EditKey, tuple[str, float]]:
    """Usable edits the ensemble, reading the sentence alone, does not see move to the target.

    Unmoved: mean P(target) of the edited sentence below 0.5 and risen by less than ``min_gain``
    over the original sentence's, or fallen by more than :data:`WRONG_WAY` (moved the wrong way:
    "how much joy you take away" → "how much sorrow", with Positive the target). Returns ``{edit key: (what
    to tell the LLM, the original sentence's P(target))}``.
    """
    if polar_fn is None or min_gain <= 0:
        return {}
    out: dict[EditKey, tuple[str, float]] = {}
    by_target: dict[str, list[tuple[Slot, FieldPlan, SentenceEdit]]] = {}
    for slot, plan, edit in done:
        if plan.field == "text" and not _rating_only_turned(slot, edit):
            by_target.setdefault(slot.target, []).append((slot, plan, edit))
    for target, items in by_target.items():
        probs = polar_fn([e.original for _, _, e in items] + [e.answer for _, _, e in items], target)
        if probs is None:
            return {}
        before, after = probs[: len(items)], probs[len(items):]
        for (slot, plan, edit), p0, p1 in zip(items, before, after, strict=True):
            # NaN (a member without the label): no verdict
            if not ((p1 < 0.5 and p1 - p0 < min_gain) or p1 < p0 - WRONG_WAY):
                continue
            edit.problems.append("unmoved")
            label = str(slot.example["label"])
            old = {w.key: w.text for w in segment(edit.original) if w.is_lexical}
            new = {w.key: w.text for w in segment(edit.answer or "") if w.is_lexical}
            added = [new[k] for k in new if k not in old and k not in FUNCTION_WORDS]
            removed = [old[k] for k in old if k not in new and k not in FUNCTION_WORDS]
            quoted = ", ".join(f'"{w}"' for w in added[:4])
            if p1 < p0 - WRONG_WAY:
                said = f" {quoted} point away from {target}." if added else ""
                message = f"It reads less as {target} than the sentence did.{said}"
            else:
                said = (f" {quoted} mean much the same as " + ", ".join(f'"{w}"' for w in removed[:4]) + "."
                        if added and removed else "")
                message = f"It still reads as {label}.{said}"
            out[edit_key(slot, plan, edit)] = (f"{message} Use words of the opposite meaning, or add or remove a negation, so that "
                             f"it reads as {target}.", float(p0))
    return out


def _rating_only_turned(slot: Slot, edit: SentenceEdit) -> bool:
    """The edit turned the sentence's rating of the original label's side, and nothing else in the sentence
    carries that label (no word with z >= :data:`CUE_Z` toward it: "10/10 stars!", "I give it a 10/10"): moved,
    whatever the members read — they called "0/10 stars!" unmoved and sent two more requests. "I would highly
    recommend it, 9/10" still goes to the members."""
    label = str(slot.example["label"])
    found = against(edit.original, slot.target, label, slot.sides) if slot.sides else []
    if not found or against(edit.answer or "", slot.target, label, slot.sides):
        return False
    rest = edit.original
    for rating in found:
        rest = rest.replace(rating.text, " ")
    return not any(slot.cues.get(w.key, 0.0) >= CUE_Z for w in segment(rest) if w.is_lexical)


def _settle(firsts: dict[EditKey, tuple[Slot, SentenceEdit, tuple[str | None, str | None], float]], polar_fn: Any,
            min_gain: float) -> dict[EditKey, float]:
    """After repairing unmoved edits: keep whichever of the first edit and the repair reads more as the target;
    drop the edit (the sentence stays as it was) when even that one reads less as the target than the sentence.

    Returns ``{edit key: its P(target)}`` of the kept edits that are still unmoved (P(target) below 0.5 and risen
    by less than ``min_gain``): candidates for a fresh try.
    """
    still: dict[EditKey, float] = {}
    for target in {slot.target for slot, _, _, _ in firsts.values()}:
        items = [(key, edit, first, p0) for key, (slot, edit, first, p0) in firsts.items() if slot.target == target]
        repaired = [(key, edit) for key, edit, first, _ in items if edit.answer != first[0]]
        probs = polar_fn([first[0] for _, _, first, _ in items] + [edit.answer for _, edit in repaired], target)
        p_first = dict(zip((k for k, _, _, _ in items), probs[: len(items)], strict=True))
        p_repair = dict(zip((k for k, _ in repaired), probs[len(items):], strict=True))
        for key, edit, first, p0 in items:
            best = p_repair.get(key, float("-inf"))
            if not best > p_first[key]:
                if key in p_repair:
                    edit.problems.append("repair kept out")
                edit.answer, edit.new = first
                best = p_first[key]
            if best < p0 - WRONG_WAY:
                edit.answer = edit.new = None
                edit.problems.append("wrong direction")
                edit.failure = (f"Sentence {edit.index + 1}: every edit read less as {target} than the sentence "
                                f"(sentence reader, P {best:.2f} < {p0:.2f}).")
            elif best < 0.5 and best - p0 < min_gain:
                still[key] = float(best)
    return still
