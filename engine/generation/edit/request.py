"""The request of one sentence edit, and reading and checking its answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.counterbias.edit import Check, SentenceEdit, check_sentence, clean_sentence
from engine.generation.edit.state import EditKey, EditRun, edit_key
from engine.generation.plan import FieldPlan, Slot, params
from engine.llm.base import ChatRequest, ChatResult, Failure
from engine.generation.demos import DEMO_PROMPT, text_hash, with_demos
from engine.llm.prompts import Prompt, load_prompt
from engine.text.ratings import against, suggestion

__all__ = ["WRONG_WAY", "backward", "check_edit", "edit_request", "read_answer", "take_edit"]

#: How far the reader's P(target) of an edited sentence may fall below the original sentence's before the edit
#: counts as moved the wrong way (edit mode with ``edit_moved``).
WRONG_WAY = 0.1


def edit_request(run: EditRun, slot: Slot, plan: FieldPlan, edit: SentenceEdit, prompt: str = "edit_sentence",
                 **extra: str) -> ChatRequest:
    """The request editing ``edit`` with ``prompt``: the sentence with its neighbours (of ``plan.others``) as context,
    the words to change and to copy."""
    sentences = plan.others
    before = sentences[edit.index - 1] if edit.index > 0 else ""
    if plan.field == "hypothesis":
        before = f"(premise) {slot.example.get('premise') or ''}" + (f" (hypothesis) {before}" if edit.index else "")
    after = sentences[edit.index + 1] if edit.index + 1 < len(sentences) else ""
    template = load_prompt(prompt)
    messages = template.render(
        task=run.task, labels=", ".join(run.labels), before=before, sentence=edit.sentence, after=after,
        label=str(slot.example["label"]), target=slot.target, change=", ".join(edit.change) or "(not named)",
        keep=", ".join(edit.keep) or "(none)", **extra)
    if prompt == DEMO_PROMPT and run.pool is not None and plan.field == "text":
        demos = run.pool.nearest(edit.sentence, str(slot.example["label"]), slot.target, run.settings.demonstrations,
                                 exclude=text_hash(plan.original))
        if demos:
            turn = Prompt(template.name, template.version, (template.messages[-1],), template.sha256)
            messages = with_demos(messages, demos, lambda d: turn.render(
                task=run.task, labels=", ".join(run.labels), before=d.before, sentence=d.sentence, after=d.after,
                label=d.label, target=d.target, change=", ".join(d.change) or "(not named)", keep="(none)",
                **extra)[0]["content"])
            known = {d["id"] for d in edit.demos}
            edit.demos.extend(d.to_dict() for d in demos if d.id not in known)
    return ChatRequest(messages, params(run.settings, slot))


def take_edit(run: EditRun, slot: Slot, plan: FieldPlan, edit: SentenceEdit, answer: ChatResult | Failure, *,
              final: bool) -> str | None:
    """Read an edit answer into ``edit`` (``edit.new`` is it after the gender swap); return the problem when a repair
    request should follow."""
    if isinstance(answer, Failure):
        slot.fail("edit", answer.message, retriable=answer.retriable, hint=answer.hint)
        return None
    new, problem = read_answer(run, slot, plan, edit, answer)
    if problem is None:
        edit.answer, edit.new = new, run.swapper_of(plan)(new)
        return None
    edit.problems.append(problem.reason)
    if final:  # the sentence stays as it was; the slot fails only if no sentence could be edited
        edit.failure = f"Sentence {edit.index + 1} of the {plan.field}: {problem.message}"
        return None
    return problem.message


def read_answer(run: EditRun, slot: Slot, plan: FieldPlan, edit: SentenceEdit,
                answer: ChatResult) -> tuple[str, Check | None]:
    """Record an answer to an edit request; return the edited sentence it holds and why it cannot be used."""
    edit.raw.append(answer.text)
    new = clean_sentence(answer.text, edit.sentence)
    return new, check_edit(run, slot, plan, edit, new)


def check_edit(run: EditRun, slot: Slot, plan: FieldPlan, edit: SentenceEdit, new: str) -> Check | None:
    """Why an edited sentence cannot be used (:func:`~engine.counterbias.edit.check_sentence`, and a rating of the
    original label's side kept), or ``None``."""
    problem = check_sentence(new, edit.sentence, edit.keep, guard=run.guard_for(edit), original_text=plan.original,
                             labels=run.labels, others=plan.others, lean=slot.lean, target=slot.target,
                             known=slot.vocabulary)
    if problem is None and plan.field == "text" and slot.sides:
        problem = _rating_kept(new, slot)
    return problem


def _rating_kept(new: str, slot: Slot) -> Check | None:
    """An edited sentence that still holds a rating of the original label's side ("I give it 10/10")."""
    kept = against(new, slot.target, str(slot.example["label"]), slot.sides)
    if not kept:
        return None
    example = suggestion(kept[0], slot.sides.get(slot.target))
    return Check("rating kept", f'It keeps the rating "{kept[0].text}", which goes with {slot.example["label"]}: '
                 f'move it to the other end of its scale (for example "{example}").')


def backward(usable: Sequence[tuple[Slot, FieldPlan, SentenceEdit, str]], reader: Any) -> set[EditKey]:
    """Answers (flip repairs, fresh tries) the reader reads as less the target than what they would replace — the
    kept edit, else the sentence — by more than :data:`WRONG_WAY`."""
    if reader is None:
        return set()
    out: set[EditKey] = set()
    for target in {slot.target for slot, plan, _, _ in usable if plan.field == "text"}:
        items = [(edit_key(slot, plan, edit), edit, new) for slot, plan, edit, new in usable
                 if plan.field == "text" and slot.target == target]
        probs = reader([edit.answer or edit.sentence for _, edit, _ in items] + [new for _, _, new in items], target)
        for (key, _, _), before, after in zip(items, probs[: len(items)], probs[len(items):], strict=True):
            if after < before - WRONG_WAY:  # NaN (a member without the label): no verdict
                out.add(key)
    return out
