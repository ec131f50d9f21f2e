"""Keyword-guided minimal edits: CORE's editor (retrieve-then-edit) and the LLM-only baseline.

CORE (Dixit et al. 2022) steers an LLM editor with text retrieved from a corpus: excerpts whose
label is the wanted one, and their content words as keywords, make the edits more diverse
than an LLM left to itself (which repeats negation and antonyms). Here one request per
(example, target) asks for a minimal edit of the whole text toward the target label, offering
the keywords and a few of the excerpts (method ``core``); without them (method ``llm``) the same
prompt is the LLM-only baseline the CORE comparison needs (same model, no retrieval, no triples).

Each answer is cleaned (quotes, ``Text:`` labels) and checked with the verification heuristics
(prompt echo, refusal, bare label, comment on the text, formatting, truncation, copy, few-shot
leak); an answer that fails gets one repair request naming the problem, then the candidate is a
recorded failure with its reason. Candidates are stored as they are made (resumable: a rerun
skips what exists for the same settings and retries failures) and judged like CoBA candidates,
so they share the verification panel, the review and the export. Their ``meta`` keeps the
excerpts and keywords that guided them (shown beside the candidate in the review). Of a
premise/hypothesis pair only the hypothesis is edited; the premise is shown as its context and
kept as written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.counterbias.settings import GenerationConfigError, candidate_fields, edited_field, targets_for
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.llm.base import ChatBackend
    from engine.llm.config import LLMConfig
    from engine.store.project import Project

__all__ = ["NLI_WANTED", "Guide", "GuidedResult", "GuidedSettings", "generate_guided", "guided_problem",
           "premise_problem", "wanted_label"]

METHODS = ("core", "llm")
#: Excerpts quoted in the prompt (the keywords come from all of them).
PROMPT_EXCERPTS = 3


@dataclass(frozen=True)
class GuidedSettings:
    """How guided edits are made.

    Parameters
    ----------
    method
        ``"core"`` (keywords and excerpts retrieved for each example guide the edit) or ``"llm"``
        (no guidance: the LLM-only baseline).
    max_keywords
        Keywords offered per edit.
    targets, temperature, seed, max_tokens
        As for CoBA generation (:class:`~engine.counterbias.settings.GenerateSettings`).
    guides_from
        Where the guides came from (CORE's retrieval settings, see
        :class:`engine.counterbias.retrieve_edit.RetrievalSettings`): other retrieval settings make other
        candidates instead of being skipped as made. Part of the key only when set.
    """

    method: str = "core"
    max_keywords: int = 8
    targets: str = "other"
    temperature: float = 0.7
    seed: int = 13
    max_tokens: int = 384
    guides_from: str | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise GenerationConfigError(f"Unknown guided-edit method {self.method!r}.", "Use 'core' or 'llm'.")
        if not 0 <= self.max_keywords <= 50:
            raise GenerationConfigError(f"max_keywords {self.max_keywords} is out of range.", "Use 0 to 50.")

    def key(self) -> str:
        """Identity of what is generated (resume skips candidates with this key)."""
        fields = dataclasses.asdict(self)
        if fields["guides_from"] is None:
            del fields["guides_from"]  # keys made before the field existed stay valid
        raw = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Guide:
    """What guides one example's edit: retrieved excerpts (with the wanted label) and their keywords."""

    excerpts: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


@dataclass
class GuidedResult:
    """Candidate ids made and failed, examples skipped (already made), requests sent, seconds."""

    run_id: int | None = None
    created: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    skipped: int = 0
    sent: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {"created": len(self.created), "failed": len(self.failed), "skipped": self.skipped,
                "sent": self.sent, "seconds": round(self.seconds, 1)}


def guided_problem(text: str, original: str, labels: Sequence[str], guard: Any = None) -> str | None:
    """Why a cleaned guided edit cannot be used (the verification heuristics), or ``None``.

    Examples
    --------
    >>> guided_problem("The movie review is positive.", "A bad film.", ["Negative", "Positive"])
    'It is not the edited text: only the label "Positive".'
    >>> guided_problem("A fine film.", "A bad film.", ["Negative", "Positive"]) is None
    True
    """
    from engine.verification import heuristics as h

    if not text.strip():
        return "It is empty."
    for found in (h.refusal(text, original), h.bare_label(text, original, labels), h.label_named(text, original, labels),
                  h.commentary(text, original),
                  h.prompt_echo(text, original), h.formatting(text, original), h.copy(text, original),
                  h.truncation(text, original)):
        if found:
            return f"It is not the edited text: {found}."
    if guard is not None:
        leaked = guard.find(text, original)
        if leaked:
            return f'It copies "{leaked}" from the examples, which do not belong to this text.'
    return None


def _guide_block(guide: Guide | None, settings: GuidedSettings) -> str:
    if settings.method == "llm" or guide is None or not (guide.keywords or guide.excerpts):
        return "No related texts for this one."
    lines = []
    if guide.keywords:
        lines.append("Words from related texts: " + ", ".join(guide.keywords[: settings.max_keywords]))
    if guide.excerpts:
        quoted = " | ".join(json.dumps(e.strip(), ensure_ascii=False) for e in guide.excerpts[:PROMPT_EXCERPTS])
        lines.append(f"Related texts (do not copy): {quoted}")
    return "\n".join(lines)


def generate_guided(
    project: Project,
    dataset_id: int,
    example_ids: Sequence[int] | None,
    llm_config: LLMConfig,
    *,
    settings: GuidedSettings | None = None,
    guides: Mapping[tuple[int, str], Guide] | None = None,
    judge: Sequence[str] = (),
    backend: ChatBackend | None = None,
    task: str | None = None,
    chunk_size: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> GuidedResult:
    """Make one guided edit per example and target label; store and judge each as it is made.

    Parameters
    ----------
    project, dataset_id, example_ids
        The examples to edit (``None``: every example of the dataset). Of a premise/hypothesis
        pair the hypothesis is edited, the premise shown as its context and kept
        (prompt ``guided_edit_pair``).
    llm_config, backend
        The LLM editor (an existing backend may be passed).
    settings
        :class:`GuidedSettings` (default: CORE).
    guides
        ``{(example id, target label): Guide}`` from retrieval (CORE); missing entries get no
        guidance. Ignored by the ``llm`` method.
    judge
        Ensemble members that judge each candidate (verification checks run either way).

    Raises
    ------
    GenerationConfigError
        Bad settings.
    LLMError
        A failure every request would share (refused key, no server): stopped at once; what was
        made before is kept.
    Cancelled
        Finished chunks are stored.
    """
    from engine.generation.job import rate_text
    from engine.counterbias.leak import LEAK_SOURCES
    from engine.counterbias.leak import LeakGuard
    from engine.counterbias.settings import GenerateSettings
    from engine.counterbias.verify import judge_candidates
    from engine.llm.base import ChatRequest, ChatResult
    from engine.llm.cache import CachedClient
    from engine.llm.prompts import load_prompt
    from engine.llm.registry import create_backend
    from engine.store.runs import recorded_run

    token = ensure_token(cancel)
    settings = settings or GuidedSettings()
    started = time.perf_counter()
    dataset = project.dataset(dataset_id)
    pair = dataset.task == "pair"
    edited = edited_field(dataset.task)
    ids = ([int(r["id"]) for r in project.iter_examples(dataset.id)] if example_ids is None
           else list(dict.fromkeys(int(i) for i in example_ids)))
    key = settings.key()
    method = settings.method
    examples = {int(r["id"]): dict(r) for r in project.examples(ids)}
    done = {(int(r["example_id"]), r["target_label"]) for r in project.db.query(
        "SELECT example_id, target_label FROM candidates WHERE method = ? AND status != 'failed' "
        "AND json_extract(meta, '$.settings_key') = ?", [method, key])}
    jobs = [(i, t) for i in ids if i in examples
            for t in targets_for(str(examples[i]["label"]), dataset.labels, settings.targets)]
    todo = [(i, t) for i, t in jobs if (i, t) not in done]
    result = GuidedResult(skipped=len(jobs) - len(todo))
    task = task or GenerateSettings().task_description(dataset.labels)
    prompt = load_prompt("guided_edit_pair" if pair else "guided_edit")
    repair = load_prompt("guided_edit_repair")
    guard = LeakGuard.from_prompts(LEAK_SOURCES[method])
    own = backend is None
    chat_backend = backend or create_backend(llm_config)
    client = CachedClient(chat_backend, project)
    params = {"llm": llm_config.to_dict(), "settings": dataclasses.asdict(settings), "settings_key": key,
              "examples": len(ids), "prompts": {prompt.name: prompt.sha256[:12]}}
    chunk = chunk_size or max(4, 2 * int(llm_config.concurrency))
    with closing(chat_backend) if own else nullcontext(), recorded_run(project, method, dataset.id, params) as run:
        result.run_id = run.id
        gen_progress = scaled(progress, 0.0, 0.9)
        t0 = time.perf_counter()
        for start in range(0, len(todo), chunk):
            token.raise_if_cancelled()
            part = todo[start : start + chunk]
            messages = []
            for i, target in part:
                guide = (guides or {}).get((i, target))
                seed = settings.seed + int(hashlib.sha256(f"{i}:{target}".encode()).hexdigest()[:6], 16) % 1000
                context = {"premise": examples[i]["premise"] or ""} if pair else {}
                messages.append((prompt.render(
                    task=task, labels=", ".join(dataset.labels), label=str(examples[i]["label"]),
                    target=wanted_label(target) if pair else target,
                    guide=_guide_block(guide, settings), text=examples[i][edited] or "", **context),
                    {"temperature": settings.temperature, "seed": seed, "max_tokens": settings.max_tokens}))
            first = client.chat_many([ChatRequest(m, p) for m, p in messages], cancel=token)
            result.sent += first.sent
            outcome: list[dict[str, Any]] = []
            retry = []
            for k, ((i, target), answer) in enumerate(zip(part, first.results, strict=True)):
                item = _read(answer, examples[i], edited, dataset.labels, guard, ChatResult)
                outcome.append(item)
                if item.get("problem") and item.get("retriable_by_repair"):
                    retry.append(k)
            if retry:
                requests = []
                for k in retry:
                    m, p = messages[k]
                    raw = outcome[k]["raw"]
                    requests.append(ChatRequest([*m, {"role": "assistant", "content": raw[:4000]},
                                                 *repair.render(problem=outcome[k]["problem"], target=part[k][1])], p))
                second = client.chat_many(requests, cancel=token)
                result.sent += second.sent
                for k, answer in zip(retry, second.results, strict=True):
                    i = part[k][0]
                    again = _read(answer, examples[i], edited, dataset.labels, guard, ChatResult)
                    again["repaired_from"] = outcome[k].get("problem")
                    outcome[k] = again
            made, failed = project.writer.run(_store, run.id, method, key, part, outcome, examples, guides or {},
                                              settings, llm_config, edited)
            result.created.extend(made)
            result.failed.extend(failed)
            finished = start + len(part)
            gen_progress(finished / max(len(todo), 1),
                         f"{method}: {finished}/{len(todo)} candidates{rate_text(finished, t0, len(todo))}")
        if result.created:
            judge_candidates(project, result.created, list(judge), progress=scaled(progress, 0.9, 1.0), cancel=token)
        result.seconds = time.perf_counter() - started
        run.result = result.summary()
        run.message = f"{len(result.created)} candidates, {len(result.failed)} failed"
    progress(1.0, f"{method}: {len(result.created)} candidates, {len(result.failed)} failed")
    return result


#: What each NLI label asks of a new hypothesis, said beside the wanted label in the pair prompts (a small
#: model otherwise reaches for a negation whatever the label).
NLI_WANTED = {"entailment": "the premise makes the new hypothesis certainly true",
              "contradiction": "the premise makes the new hypothesis certainly false",
              "neutral": "the premise leaves the new hypothesis open: it may be true or false"}


def wanted_label(target: str) -> str:
    """The wanted label as the pair prompts say it: an NLI label with what it asks, another label as it is.

    Examples
    --------
    >>> wanted_label("Contradiction")
    'Contradiction (the premise makes the new hypothesis certainly false)'
    >>> wanted_label("paraphrase")
    'paraphrase'
    """
    gloss = NLI_WANTED.get(target.strip().lower())
    return f"{target} ({gloss})" if gloss else target


def premise_problem(text: str, original: str, premise: str | None) -> str | None:
    """Why a new hypothesis is the premise again rather than an edit of the hypothesis, or ``None``.

    A new hypothesis closer (word edit distance) to the premise than to the hypothesis it edits
    copies the premise: a small model's way out of a pair it cannot edit.

    Examples
    --------
    >>> premise_problem("Three men trudge through the snow on snowshoes.", "Three men are lost.",
    ...                 "Three men trudge through the snow on snowshoes.")
    'It repeats the premise instead of editing the hypothesis.'
    >>> premise_problem("Three men are resting.", "Three men are lost.", "Three men trudge through the snow.") is None
    True
    """
    from engine.text.distance import word_edit_distance

    if premise and word_edit_distance(premise, text) < word_edit_distance(original, text):
        return "It repeats the premise instead of editing the hypothesis."
    return None


def _read(answer: Any, example: Mapping[str, Any], edited: str, labels: Sequence[str], guard: Any,
          chat_result: type) -> dict[str, Any]:
    """An answer editing ``example[edited]`` as ``{"text", "raw", "problem", "retriable_by_repair", "error"}``."""
    from engine.generation.reconstruct import clean_reconstruction

    if not isinstance(answer, chat_result):
        return {"problem": f"{answer.code} {answer.message}", "error": {
            "step": "edit", "message": answer.message, "hint": answer.hint, "retriable": answer.retriable}}
    raw = answer.text or ""
    original = example[edited] or ""
    text, problem = clean_reconstruction(raw, original, labels=labels)
    problem = problem or guided_problem(text, original, labels, guard)
    if edited == "hypothesis":
        problem = problem or premise_problem(text, original, example.get("premise"))
    if problem is None and answer.finish_reason == "length":
        problem = "It was cut off at the token limit."
    return {"text": text, "raw": raw, "problem": problem, "retriable_by_repair": problem is not None}


def _store(conn: sqlite3.Connection, run_id: int, method: str, key: str, part: Sequence[tuple[int, str]],
           outcome: Sequence[dict[str, Any]], examples: Mapping[int, dict[str, Any]],
           guides: Mapping[tuple[int, str], Guide], settings: GuidedSettings, llm: LLMConfig,
           edited: str = "text") -> tuple[list[int], list[int]]:
    from engine.text.distance import word_edit_distance

    created, failed = [], []
    stamp = now()
    for (i, target), item in zip(part, outcome, strict=True):
        conn.execute("DELETE FROM candidates WHERE example_id = ? AND target_label = ? AND method = ? "
                     "AND status = 'failed' AND json_extract(meta, '$.settings_key') = ?", (i, target, method, key))
        guide = guides.get((i, target)) if method == "core" else None
        original = examples[i][edited] or ""
        ok = item.get("problem") is None
        error = None if ok else (item.get("error") or {"step": "edit", "message": item["problem"],
                                                       "hint": "Generate again: a new sample may succeed.",
                                                       "retriable": True})
        meta = {
            "settings_key": key, "run_id": run_id, "mode": method, "backend": llm.backend, "model": llm.model,
            "original_label": examples[i]["label"], "generated": {edited: item["text"]} if ok else {},
            "guide": {"excerpts": list(guide.excerpts), "keywords": list(guide.keywords)[: settings.max_keywords]}
            if guide else None,
            "raw": (item.get("raw") or "")[:4000], "repaired_from": item.get("repaired_from"), "error": error,
            "edit_distance": {edited: round(word_edit_distance(original, item["text"]), 4)} if ok else {},
        }
        cursor = conn.execute(
            "INSERT INTO candidates (run_id, example_id, method, target_label, text, premise, hypothesis, scores, "
            "meta, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?)",
            (run_id, i, method, target, *candidate_fields(edited, item["text"] if ok else None, examples[i]),
             json.dumps(meta, ensure_ascii=False), "proposed" if ok else "failed", stamp))
        (created if ok else failed).append(int(cursor.lastrowid))
    return created, failed
