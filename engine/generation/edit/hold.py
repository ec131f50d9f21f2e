"""Stage ``hold``: the first try of a sentence whose marked opinion words hold spurious words keeps those words and
turns the opinion around them (``GenerateSettings.edit_hold``)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.counterbias.edit import SentenceEdit
from engine.generation.edit.request import edit_request, read_answer
from engine.generation.edit.state import EditRun, edit_key
from engine.generation.plan import FieldPlan, Slot, params
from engine.llm.base import ChatRequest, Failure, Message
from engine.llm.prompts import load_prompt
from engine.text import segment

__all__ = ["PROMPTS", "hold_tries"]

PROMPTS = ("edit_sentence_hold", "edit_sentence", "edit_sentence_repair")

_Item = tuple[Slot, FieldPlan, SentenceEdit]


def held_plan(edit: SentenceEdit) -> tuple[list[str], list[str], list[str]]:
    """The words to change, the opinion words to keep and turn around, and the words to copy of an edit's try with
    its held words kept: a marked phrase made only of held words ("heartfelt", "superbly-crafted") is kept and
    turned around, not changed; a longer one ("great acting") is still changed, its held words copied."""
    held = {w.key for h in edit.held for w in segment(h) if w.is_lexical}
    whole = [c for c in edit.change if (keys := {w.key for w in segment(c) if w.is_lexical}) and keys <= held]
    return ([c for c in edit.change if c not in whole], whole, list(dict.fromkeys([*edit.keep, *edit.held])))


def hold_tries(run: EditRun) -> None:
    """The first try of each sentence whose marked opinion words hold spurious words (``held``): those words are
    copied and the opinion turned around them (prompt ``edit_sentence_hold``, or ``edit_sentence`` when every held
    word sits in a longer phrase that is still changed).

    The try is the sentence's edit when it passes every check of an edit (its held words included) and the sentence
    reader reads it as the target (above 0.5: not merely as no label); otherwise it is repaired once in the same
    conversation (``edit_sentence_repair``, saying what was wrong), and the repair is judged the same way. When
    neither is, the held words are released (``released``) and the sentence is edited as without the hold — the
    same requests. The keys of the edits the tries made go to ``run.taken``.
    """
    todo = [(j.slot, j.plan, j.edit) for j in run.jobs if j.edit.held and j.slot.error is None]
    if not todo or run.reader is None:
        for _, _, edit in todo:
            edit.released, edit.hold = list(edit.held), "no reader"
        return
    asked = []
    for slot, plan, edit in todo:
        change, turn, keep = held_plan(edit)
        held = SentenceEdit(edit.index, edit.original, edit.sentence, change, keep)
        asked.append(edit_request(run, slot, plan, held, prompt="edit_sentence_hold" if turn else "edit_sentence",
                                  hold=", ".join(turn)).messages)
    left = _judge_holds(run, list(zip(todo, asked, strict=True)))
    if left:
        repair = load_prompt("edit_sentence_repair")
        again = [((slot, plan, edit), [*messages, {"role": "assistant", "content": answer},
                                       *repair.render(problem=problem, target=slot.target,
                                                      keep=", ".join(held_plan(edit)[2]))])
                 for (slot, plan, edit), messages, answer, problem in left]
        left = _judge_holds(run, again)
    for (slot, _, edit), _, _, _ in left:
        slot.repaired("release")
        edit.released = list(edit.held)


def _judge_holds(run: EditRun,
                 items: Sequence[tuple[_Item, list[Message]]]) -> list[tuple[_Item, list[Message], str, str]]:
    """Send the held tries ``items`` (``((slot, plan, edit), messages)``) and take each answer that passes every
    check (the held words among the words to keep) and reads as the target into its edit (its key into
    ``run.taken``). Returns the others, with their messages, answer and what to tell the LLM; ``edit.hold`` says how
    each ended."""
    answers = run.client.chat_many([ChatRequest(m, params(run.settings, s)) for (s, _, _), m in items],
                                   cancel=run.token).results
    left, tried = [], []
    for ((slot, plan, edit), messages), answer in zip(items, answers, strict=True):
        if isinstance(answer, Failure):
            slot.fail("edit", answer.message, retriable=answer.retriable, hint=answer.hint)
            continue
        released_keep, edit.keep = edit.keep, held_plan(edit)[2]
        new, problem = read_answer(run, slot, plan, edit, answer)
        edit.keep = released_keep
        if problem is not None:
            edit.hold = problem.reason
            left.append(((slot, plan, edit), messages, answer.text, problem.message))
        else:
            tried.append(((slot, plan, edit), messages, answer.text, new))
    for target in {slot.target for (slot, _, _), *_ in tried}:
        mine = [t for t in tried if t[0][0].target == target]
        for ((slot, plan, edit), messages, text, new), p in zip(mine, run.reader([t[3] for t in mine], target),
                                                                  strict=True):
            if not p > 0.5:  # NaN: no verdict, not taken
                edit.hold = "not read as the target"
                words, it = ", ".join(f'"{w}"' for w in edit.held), "them" if len(edit.held) > 1 else "it"
                left.append(((slot, plan, edit), messages, text,
                             f"It does not read as {target}. Keep {words} and turn the opinion around {it}: negate "
                             f"{it}, or say the opposite about {it}, so that the sentence reads as {target}."))
                continue
            edit.change, _, edit.keep = held_plan(edit)
            edit.answer, edit.new, edit.hold = new, run.swapper_of(plan)(new), "kept"
            edit.messages = list(messages)
            plan.keep = list(dict.fromkeys([*plan.keep, *edit.held]))
            run.taken.add(edit_key(slot, plan, edit))
    return left
