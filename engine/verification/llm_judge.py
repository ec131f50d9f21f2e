"""The LLM judge: asks an LLM which label a candidate expresses (the ``llm-judge`` check).

An independent judge next to the ensemble: the ensemble was trained on the very data whose
spurious words the candidates keep, so it can be fooled by them; an instruction-tuned LLM was not.
The answer is untrusted data: it counts only when, stripped of an ``Answer:``/``Label:``
prefix, quotes and a final full stop, it is exactly one label name (case-insensitive).
Otherwise the request is repeated once with a reminder of the labels; a second unusable answer
is recorded as unparsed (the check is then skipped, not failed). The judge also reads each
sentence of every single-text candidate alone (:mod:`engine.counterbias.sentence_reading`) and
stores those still speaking for the original label; the ``residual`` check then uses this reading
instead of the one recorded at generation. With the generating model the requests are the
generation's own, answered from the cache; with a stronger model behind the judge, the sentences a
small generator's reader missed are read again (with the bundled 1.5B model, the leftover
sentences it does not see are what keeps the accept rule's precision down). Every answer is stored in the
project's LLM cache, so a rerun costs nothing; a refused key or an unreachable server stops
the job at once (:class:`~engine.llm.errors.LLMError`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.llm.label_answer import ask_again, parse_label
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled

if TYPE_CHECKING:
    from engine.counterbias.verify import CandidateFilter
    from engine.llm.base import ChatBackend
    from engine.llm.config import LLMConfig
    from engine.store.project import Project

__all__ = ["LLMJudgeResult", "judge_messages", "llm_judge_candidates", "parse_label"]

def _text_of(row: dict[str, Any], fields: Sequence[str]) -> str:
    if list(fields) == ["text"]:
        return row.get("text") or ""
    return "\n".join(f"{f.capitalize()}: {row.get(f) or ''}" for f in fields)


def judge_messages(text: str, labels: Sequence[str], task: str) -> list[dict[str, str]]:
    """The chat messages asking which of ``labels`` ``text`` expresses."""
    from engine.llm.prompts import load_prompt

    return load_prompt("judge_label").render(task=task, labels=", ".join(labels), text=text)


def _read_residual(client: Any, rows: Sequence[dict[str, Any]], metas: Sequence[dict[str, Any]],
                   labels: Sequence[str], task: str, token: CancelToken,
                   progress: ProgressFn = no_progress) -> dict[int, list[str]]:
    """``{candidate id: sentences still read as the original label}`` for the single-text candidates; a candidate
    with a sentence whose reading failed gets none (no verdict)."""
    from engine.counterbias.sentence_reading import LLMReader, residual_sentences

    todo = [(row, meta) for row, meta in zip(rows, metas, strict=True)
            if row.get("text") is not None and meta.get("original_label") is not None]
    if not todo:
        return {}
    from engine.text.sentences import split_sentences

    reader = LLMReader(client, labels, task, token)
    reader.read([s for row, _ in todo for s in split_sentences(row["text"] or "")], progress=progress)  # one batch
    found = residual_sentences(reader, [(row["text"] or "", str(meta["original_label"])) for row, meta in todo])

    return {int(row["id"]): left for (row, _), left in zip(todo, found, strict=True)
            if reader.failure_for(split_sentences(row["text"] or "")) is None}


@dataclass
class LLMJudgeResult:
    """What the LLM judge did: candidates judged, agreeing with the target, unparsed, failed."""

    judged: int = 0
    agree: int = 0
    unparsed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    scores: dict[int, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"judged": self.judged, "agree": self.agree, "unparsed": len(self.unparsed),
                "failed": len(self.failed)}


def llm_judge_candidates(
    project: Project,
    candidate_ids: Sequence[int],
    llm_config: LLMConfig,
    *,
    backend: ChatBackend | None = None,
    task: str | None = None,
    criteria: CandidateFilter | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> LLMJudgeResult:
    """Ask the LLM which label each candidate expresses; store its answer and every verdict again.

    Parameters
    ----------
    project
        The open project.
    candidate_ids
        Candidates to judge (failed ones are skipped).
    llm_config, backend
        The LLM (a ready backend may be passed instead of building one from the config).
    task
        How to describe the task to the LLM (default: from the label names).
    criteria
        The accept rule; ``passes`` is recomputed with it.

    Raises
    ------
    LLMError
        A fatal failure (refused key, no server): stopped at once; answers received so far are kept.
    """
    from engine.counterbias.settings import GenerateSettings
    from engine.counterbias.verify import (
        CandidateFilter,
        _dataset_labels,
        _originals,
        _store_scores,
        dataset_rating_sides,
        dataset_vocabulary,
        verdicts_for,
    )
    from engine.llm.base import ChatRequest, ChatResult
    from engine.llm.cache import CachedClient
    from engine.llm.registry import create_backend

    token = ensure_token(cancel)
    rule = criteria or CandidateFilter()
    rows = [dict(r) for r in project.db.query(
        "SELECT * FROM candidates WHERE id IN (SELECT value FROM json_each(?)) AND status != 'failed' ORDER BY id",
        [json.dumps([int(i) for i in candidate_ids])])]
    result = LLMJudgeResult()
    if not rows:
        return result
    labels = _dataset_labels(project, rows)
    task = task or GenerateSettings().task_description(labels)
    chat_backend = backend or create_backend(llm_config)
    client = CachedClient(chat_backend, project)
    metas = [json.loads(r["meta"] or "{}") for r in rows]
    messages = []
    for row, meta in zip(rows, metas, strict=True):
        fields = list((meta.get("generated") or {}).keys()) or (["text"] if row.get("text") is not None
                                                               else ["premise", "hypothesis"])
        if fields != ["text"]:
            fields = ["premise", "hypothesis"]
        messages.append(judge_messages(_text_of(row, fields), labels, task))
    params = {"temperature": 0.0, "max_tokens": 8}
    first = client.chat_many([ChatRequest(m, params) for m in messages], progress=scaled(progress, 0.0, 0.4),
                             cancel=token)
    answers: list[Any] = list(first.results)
    retry = [i for i, a in enumerate(answers) if isinstance(a, ChatResult) and parse_label(a.text, labels) is None]
    if retry:
        second = client.chat_many([ChatRequest(ask_again(messages[i], answers[i].text, labels), params) for i in retry],
                                  progress=scaled(progress, 0.4, 0.45), cancel=token)
        for i, outcome in zip(retry, second.results, strict=True):
            if isinstance(outcome, ChatResult) and parse_label(outcome.text, labels) is not None:
                answers[i] = outcome
    residual = _read_residual(client, rows, metas, labels, task, token, scaled(progress, 0.45, 0.97))
    progress(0.97, "LLM judge: sentences read")
    originals = _originals(project, rows)
    sides = dataset_rating_sides(project, rows)
    vocabulary = dataset_vocabulary(project, rows)
    model = f"{chat_backend.name}:{chat_backend.model}"
    for row, meta, outcome in zip(rows, metas, answers, strict=True):
        cid = int(row["id"])
        scores = json.loads(row["scores"] or "{}")
        if isinstance(outcome, ChatResult):
            label = parse_label(outcome.text, labels)
            entry: dict[str, Any] = {"label": label, "answer": outcome.text[:200], "model": model}
            if label is None:
                entry["error"] = f"answer is not a label: {outcome.text.strip()[:60]!r}"
                result.unparsed.append(cid)
            else:
                result.judged += 1
                result.agree += label == row["target_label"]
        else:
            entry = {"label": None, "error": f"{outcome.code} {outcome.message}"[:200], "model": model}
            result.failed.append(cid)
        scores["llm_judge"] = entry
        if cid in residual:
            scores["residual"] = {"sentences": residual[cid], "model": model}
        scores["verdicts"] = verdicts_for(row, meta, scores, originals.get(int(row["example_id"]), {}), labels, rule,
                                          sides, vocabulary)
        scores["passes"] = rule.passes(scores)
        result.scores[cid] = scores
    project.writer.run(_store_scores, result.scores)
    progress(1.0, f"LLM judge: {result.agree}/{result.judged} read as the target")
    return result
