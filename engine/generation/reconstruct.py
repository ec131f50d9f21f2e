"""Reconstruct mode (the paper's method): rewrite the principal triples, arrange them, write the text from them.

The steps are in ``docs/design/generation.md`` (*Reconstruct mode*); :func:`clean_reconstruction` says what an
answer must be to be used.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.counterbias.edit import missing_words
from engine.counterbias.leak import LeakGuard
from engine.counterbias.manipulate import arrange, format_triples, names_person, swap_triple
from engine.counterbias.settings import GenerateSettings
from engine.generation.plan import FieldPlan, Slot, keep_words, params
from engine.llm.base import ChatRequest, ChatResult, Failure
from engine.llm.cache import CachedClient
from engine.llm.prompts import load_prompt
from engine.llm.triple_format import Triple, parse_triples
from engine.progress import CancelToken

if TYPE_CHECKING:
    from engine.store.project import DatasetInfo

__all__ = ["PROMPTS", "clean_reconstruction", "run_reconstruct_chunk"]

#: The prompts of reconstruct mode.
PROMPTS = ("rewrite", "rewrite_repair", "reconstruct", "reconstruct_repair")


def run_reconstruct_chunk(client: CachedClient, slots: list[Slot], dataset: DatasetInfo, settings: GenerateSettings,
                          mapping: dict[str, str], token: CancelToken, guard: LeakGuard | None = None) -> None:
    """Reconstruct mode: rewrite the principal triples, arrange, write the text from the triples."""
    task = settings.task_description(dataset.labels)
    live = [(s, f) for s in slots if s.error is None for f in s.fields]

    # 1. rewrite the principal triples (one request per field), with one repair
    rewrite = load_prompt("rewrite")
    requests = [ChatRequest(rewrite.render(
        task=task, labels=", ".join(dataset.labels), context=_context(s, f), label=s.example["label"],
        target=s.target, keep=", ".join(s.keep_words) or "(none)",
        triples=format_triples(f.triples[i] for i in f.to_rewrite)), params(settings, s)) for s, f in live]
    answers = client.chat_many(requests, cancel=token).results
    retry = []
    for (slot, plan), request, answer in zip(live, requests, answers, strict=True):
        problem = _take_rewrite(slot, plan, answer, final=False)
        if problem:
            retry.append((slot, plan, request, answer, problem))
    if retry:
        for s, _, _, _, _ in retry:
            s.repaired("rewrite")
        repair = load_prompt("rewrite_repair")
        second = client.chat_many([ChatRequest([*req.messages, {"role": "assistant", "content": ans.text},
                                                *repair.render(count=str(len(p.to_rewrite)), problem=problem,
                                                               target=s.target)], req.params)
                                   for s, p, req, ans, problem in retry], cancel=token).results
        for (slot, plan, _, _, _), answer in zip(retry, second, strict=True):
            _take_rewrite(slot, plan, answer, final=True)

    # 2. keep spurious, swap gender, shuffle/drop normal triples (seeded per slot)
    for slot in slots:
        if slot.error is not None:
            continue
        rng = random.Random(f"{settings.seed}:{slot.example['id']}:{slot.target}:{slot.sample}")
        for plan in slot.fields:
            current = list(plan.triples)
            for i, new in zip(plan.to_rewrite, plan.rewritten, strict=True):
                current[i] = new
            plan.gender = bool(mapping) and not names_person(plan.original)
            if plan.gender:
                swapped = []
                for triple in current:
                    new, found = swap_triple(triple, mapping)
                    swapped.append(new)
                    plan.swaps.extend(found)
                current = swapped
            plan.order = arrange(plan.categories, rng, shuffle=settings.shuffle, drop_prob=settings.drop_prob)
            plan.keep = keep_words(plan.original, plan, mapping if plan.gender else {})
            plan.final = [current[i] for i in plan.order]

    # 3. reconstruct the text from the ordered triples
    live = [(s, f) for s in slots if s.error is None for f in s.fields]
    reconstruct = load_prompt("reconstruct")
    requests = [ChatRequest(reconstruct.render(task=task, words=str(_length_hint(f)), triples=format_triples(f.final)),
                            params(settings, s)) for s, f in live]
    answers = client.chat_many(requests, cancel=token).results
    retry = []
    for (slot, plan), request, answer in zip(live, requests, answers, strict=True):
        problem = _take_text(slot, plan, answer, dataset.labels, final=False, guard=guard)
        if problem:
            retry.append((slot, plan, request, answer, problem))
    if retry:
        repair = load_prompt("reconstruct_repair")
        second = client.chat_many([ChatRequest([*req.messages, {"role": "assistant", "content": ans.text},
                                                *repair.render(problem=problem)], req.params)
                                   for _, _, req, ans, problem in retry], cancel=token).results
        for (slot, plan, _, _, _), answer in zip(retry, second, strict=True):
            slot.repaired("reconstruct")
            _take_text(slot, plan, answer, dataset.labels, final=True, guard=guard)


def _length_hint(plan: FieldPlan) -> int:
    """Words the reconstruction should have: the facts' words, at most the original's."""
    facts = sum(len(" ".join(t).split()) for t in plan.final)
    return max(3, min(facts + 2, len(plan.original.split())))


def _edited_words(plan: FieldPlan) -> list[str]:
    """Content words the rewrite brought in (in a rewritten triple, not in the original triples)."""
    before = {w for t in plan.triples for w in _norm(" ".join(t)).split()}
    return sorted({w for t in plan.rewritten for w in _norm(" ".join(t)).split() if len(w) >= 3} - before)


def _take_text(slot: Slot, plan: FieldPlan, answer: ChatResult | Failure, labels: Sequence[str], *,
               final: bool, guard: LeakGuard | None = None) -> str | None:
    """Read a reconstruct answer into ``plan``; return the problem when a repair request should follow."""
    if isinstance(answer, Failure):
        slot.fail("reconstruct", answer.message, retriable=answer.retriable, hint=answer.hint)
        return None
    plan.raw.append(answer.text)
    text, problem = clean_reconstruction(answer.text, plan.original, facts=plan.final, labels=labels,
                                         edited=_edited_words(plan))
    plan.text = text
    reason = "unusable"
    if problem is None:
        missing = missing_words(text, plan.keep)
        leaked = guard.find(text, plan.original) if guard is not None else None
        if missing:
            reason = "missing words"
            problem = ("The answer leaves out words that must stay exactly as they are: "
                       + ", ".join(f'"{w}"' for w in missing) + ".")
        elif leaked:
            reason = "prompt leak"
            problem = f'The answer copies "{leaked}" from the examples, which do not belong to this text.'
    if problem and final:
        slot.fail("reconstruct", problem, retriable=True, quality=True, reason=reason,
                  hint="Generate again (a retry samples anew), or use a stronger model.")
        return None
    return problem


def _context(slot: Slot, plan: FieldPlan) -> str:
    if plan.field == "hypothesis":
        return f"Premise: {slot.example.get('premise') or ''} Hypothesis: {plan.original}"
    if plan.field == "premise":
        return f"Premise: {plan.original} Hypothesis: {slot.example.get('hypothesis') or ''}"
    return plan.original


def _take_rewrite(slot: Slot, plan: FieldPlan, answer: ChatResult | Failure, *, final: bool) -> str | None:
    """Read a rewrite answer into ``plan``; return the problem when a repair request should follow."""
    if isinstance(answer, Failure):
        slot.fail("rewrite", answer.message, retriable=answer.retriable, hint=answer.hint)
        return None
    plan.raw.append(answer.text)
    triples, _rejected = parse_triples(answer.text)
    want = len(plan.to_rewrite)
    if len(triples) != want:
        problem = f"it gave {len(triples)} readable fact lines for {want} facts."
    elif all(_same(new, plan.triples[i]) for i, new in zip(plan.to_rewrite, triples, strict=True)):
        problem = "it repeated the facts without changing them."
    else:
        plan.rewritten = triples
        return None
    if final:
        slot.fail("rewrite", f"The rewrite was unusable: {problem}", retriable=True, quality=True,
                  hint="Generate again (a retry samples anew), or use a stronger model.")
        return None
    return problem


def _same(a: Triple, b: Triple) -> bool:
    """Equal up to case, spacing and punctuation."""
    return _norm(" ".join(a)) == _norm(" ".join(b))


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


_LABEL = re.compile(r"^\s*(?:text|rewritten text|output|answer|review|hypothesis)\s*:\s*", re.IGNORECASE)
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"


#: Share of the facts' content words a reconstruction must contain (checked from 3 content words on).
MIN_COVERAGE = 0.34


def clean_reconstruction(answer: str, original: str, *, facts: Sequence[Triple] = (),
                         labels: Sequence[str] = (), edited: Sequence[str] = ()) -> tuple[str, str | None]:
    """Clean a reconstruct answer; return ``(text, problem)`` with ``problem=None`` when usable.

    Strips code fences, a leading ``Text:``-style label and matching outer quotes, and joins
    lines. Unusable: empty text; an answer that is still ``a | b | c`` lines; one that is only a
    label name (small models answer the label); one more than three times (and 200 characters)
    longer than the original; one repeating the original; one holding less than
    :data:`MIN_COVERAGE` of the content words (4+ letters) of ``facts``; one holding none of the
    ``edited`` words (those the rewrite brought in), when there are any.

    Examples
    --------
    >>> clean_reconstruction('Text: "A dull film."', "A fine film.")
    ('A dull film.', None)
    >>> clean_reconstruction("Positive", "A fine film.", labels=["Negative", "Positive"])[1]
    'The answer is only a label name, not a text.'
    """
    text = answer.strip().strip("`").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("```")]
    if lines and sum(line.count("|") >= 2 for line in lines) > len(lines) / 2:
        return " ".join(lines), "The answer is a list of facts, not a text."
    text = " ".join(lines)
    text = _LABEL.sub("", text).strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    if not text:
        return "", "The answer is empty."
    if _norm(text) in {_norm(label) for label in labels}:
        return text, "The answer is only a label name, not a text."
    if len(text) > max(3 * len(original), len(original) + 200):
        return text, f"The answer is {len(text)} characters long, far longer than the original ({len(original)})."
    if _norm(text) == _norm(original):
        return text, "The answer repeats the original text instead of writing the edited facts."
    found = set(_norm(text).split())
    if edited and not found & set(edited):
        return text, (f"The answer leaves out the edited facts (none of {', '.join(list(edited)[:6])} appears); "
                      "it must state the facts as given.")
    wanted = {w for t in facts for w in _norm(" ".join(t)).split() if len(w) >= 4}
    if len(wanted) >= 3:
        share = len(wanted & found) / len(wanted)
        if share < MIN_COVERAGE:
            return text, f"The answer uses only {share:.0%} of the facts' words; it does not express the facts."
    return text, None
