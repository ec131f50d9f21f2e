"""Stage ``fresh``: one more try, in a fresh conversation with a new seed, for a sentence still unedited after its
repair or whose kept edit is still unmoved (``GenerateSettings.edit_fresh``)."""

from __future__ import annotations

from engine.counterbias.edit import SentenceEdit
from engine.generation.edit.request import backward, edit_request, read_answer
from engine.generation.edit.state import EditKey, EditRun, reread
from engine.generation.plan import RETRY_TEMPERATURE, FieldPlan, Slot
from engine.llm.base import ChatRequest, Failure

__all__ = ["FRESH_SEED", "PROMPTS", "fresh_tries"]

PROMPTS = ("edit_sentence", "edit_sentence_strong")

#: Seed offset of the fresh try of a sentence (``edit_fresh``).
FRESH_SEED = 500


def fresh_tries(run: EditRun) -> None:
    """One more try for sentences still unedited after their repair, and for edits the reader still reads as
    unmoved after theirs (``run.still``), in a fresh conversation with a new seed.

    A sentence of a text whose edits did not move it — unmoved, or sent back unchanged — gets the stronger prompt
    ``edit_sentence_strong`` (the opposite opinion, as many words as that needs) instead of the first request
    again; other failures (a word to keep dropped, the wrong sentence edited) get the first request again.

    The answer passes the same checks. For an unedited sentence it may not read less as the target than the
    sentence did (with ``edit_moved``); for an unmoved edit it replaces the edit only if it reads more as the target.
    Otherwise the sentence keeps what it had. ``run.still`` is updated: the kept edits that still read below 0.5 as
    the target, with that reading.
    """
    settings, still = run.settings, run.still
    left = dict(still)
    jobs = [j for j in run.jobs if j.slot.error is None
            and ((j.edit.new is None and j.edit.failure) or (j.edit.new is not None and j.key in still))]
    if not jobs:
        return
    requests = []
    for job in jobs:
        job.slot.repaired("fresh")
        params = dict(job.request.params)
        params["seed"] = int(params.get("seed", settings.seed)) + FRESH_SEED
        params["temperature"] = max(float(params.get("temperature", settings.temperature)), RETRY_TEMPERATURE)
        messages = job.request.messages
        if _stubborn(job.plan, job.edit, job.key, still):
            job.slot.repaired("strong")
            messages = edit_request(run, job.slot, job.plan, job.edit, prompt="edit_sentence_strong").messages
        requests.append(ChatRequest(messages, params))
    answers = run.client.chat_many(requests, cancel=run.token).results
    usable: list[tuple[Slot, FieldPlan, SentenceEdit, str]] = []
    keys: dict[int, EditKey] = {}
    for job, answer in zip(jobs, answers, strict=True):
        slot, plan, edit = job.slot, job.plan, job.edit
        if isinstance(answer, Failure):
            slot.fail("edit", answer.message, retriable=answer.retriable, hint=answer.hint)
            continue
        new, problem = read_answer(run, slot, plan, edit, answer)
        if problem is not None:
            edit.problems.append(problem.reason)
        elif new != edit.answer:
            keys[len(usable)] = job.key
            usable.append((slot, plan, edit, new))
    unedited = [(keys[i], u) for i, u in enumerate(usable) if u[2].new is None]
    wrong = backward([u for _, u in unedited], run.reader) if settings.edit_moved > 0 else set()
    for key, (slot, plan, edit, new) in unedited:
        if key in wrong:
            edit.problems.append("wrong direction")
            continue
        edit.answer, edit.new, edit.failure = new, run.swapper_of(plan)(new), None
    moved = [(keys[i], u) for i, u in enumerate(usable) if u[2].new is not None and keys[i] in still]
    for target in {slot.target for _, (slot, _, _, _) in moved}:
        items = [(key, plan, edit, new) for key, (slot, plan, edit, new) in moved if slot.target == target]
        probs = (run.reader([new for _, _, _, new in items], target) if run.reader is not None
                 else [float("nan")] * len(items))
        for (key, plan, edit, new), p in zip(items, probs, strict=True):
            if p > still[key]:  # NaN: no verdict, the edit stays
                edit.answer, edit.new = new, run.swapper_of(plan)(new)
                reread(left, key, p)
            else:
                edit.problems.append("fresh try kept out")
    run.still = left


def _stubborn(plan: FieldPlan, edit: SentenceEdit, key: EditKey, still: dict[EditKey, float]) -> bool:
    """A sentence of a text field whose edits did not move it: read as unmoved after its repair, or every answer
    sent back unchanged (the first request again mostly gets the same answer)."""
    if plan.field != "text":
        return False
    return key in still or (edit.new is None and bool(edit.problems)
                            and all(p == "unchanged" for p in edit.problems))
