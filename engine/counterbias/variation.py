"""Pattern-keeping counterfactuals (variation theory): vary the label, keep the symbolic pattern.

For an example, the symbolic pattern of its label that matches it and a wanted label, the LLM
first writes short phrases that match the same pattern and fit the wanted label (``CANNOT`` is a
valid answer: some patterns cannot carry another label); phrases that the matcher does not accept
are dropped. Then the LLM rewrites the example as little as possible so that it contains one of
the phrases and expresses the wanted label. An answer that fails the verification heuristics,
or no longer matches the pattern, gets one repair request naming the problem; after that the
candidate is a recorded failure with its reason. Candidates (method ``vt``) keep the pattern,
the matched span and the phrases in ``meta``, so the verification panel's *pattern* check gives
the pattern keeping rate (PKR), and they are judged like every other candidate (LFR, SLFR).

Patterns come from the caller, or else from the dataset's stored patterns
(:mod:`engine.patterns.store`): the best-scoring pattern of the example's label that matches it.
Examples without one are counted in ``no_pattern``, not sent. Of a premise/hypothesis pair the
hypothesis carries the pattern and is edited; the premise is shown as its context and kept
(synthesize the pair dataset's patterns with ``field="hypothesis"``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
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
    from engine.patterns.match import Matcher
    from engine.store.project import Project

__all__ = ["VariationResult", "VariationSettings", "generate_variations", "parse_phrases", "patterns_for"]

METHOD = "vt"
_CANNOT = re.compile(r"^\W*(cannot|can't|can not|none|n/a)\b", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass(frozen=True)
class VariationSettings:
    """How pattern-keeping counterfactuals are made.

    Parameters
    ----------
    phrases
        Phrases asked for in step 1.
    targets, temperature, seed, max_tokens
        As for CoBA generation.
    soft
        Soft matcher of ``(word)`` elements (``embedding`` or ``forms``).
    """

    phrases: int = 5
    targets: str = "other"
    temperature: float = 0.7
    seed: int = 17
    max_tokens: int = 384
    soft: str = "embedding"

    def __post_init__(self) -> None:
        if not 1 <= self.phrases <= 20:
            raise GenerationConfigError(f"phrases {self.phrases} is out of range.", "Ask for 1 to 20 phrases.")

    def key(self) -> str:
        """Identity of what is generated (resume skips candidates with this key)."""
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class VariationResult:
    """Candidate ids made and failed, examples skipped (already made) or without a pattern."""

    run_id: int | None = None
    created: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    skipped: int = 0
    no_pattern: int = 0
    cannot: int = 0
    sent: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {"created": len(self.created), "failed": len(self.failed), "skipped": self.skipped,
                "no_pattern": self.no_pattern, "cannot": self.cannot, "sent": self.sent,
                "seconds": round(self.seconds, 1)}


def parse_phrases(answer: str, pattern: str, matcher: Matcher, limit: int = 20) -> tuple[list[str], bool]:
    """The phrases of a step-1 answer that match ``pattern``, and whether the answer was ``CANNOT``.

    Phrases are separated by ``|`` (or, failing that, by lines or commas); bullets, numbers and
    quotes are removed; phrases over 15 words are dropped.

    Examples
    --------
    >>> from engine.patterns import Matcher
    >>> parse_phrases('"waiter was pricey" | the bill | waiter is cheap', "[waiter]+AUX+ADJ", Matcher("forms"))
    (['waiter was pricey', 'waiter is cheap'], False)
    >>> parse_phrases("CANNOT.", "$PERSON", Matcher("forms"))
    ([], True)
    """
    text = answer.strip()
    if _CANNOT.match(text) and len(text.split()) <= 3:
        return [], True
    parts = text.split("|") if "|" in text else (text.splitlines() if "\n" in text else text.split(","))
    phrases: list[str] = []
    for part in parts:
        phrase = _BULLET.sub("", part).strip().strip("\"'“”‘’`").strip()
        if not phrase or len(phrase.split()) > 15 or phrase.lower() in (p.lower() for p in phrases):
            continue
        if matcher.matches(pattern, phrase):
            phrases.append(phrase)
    return phrases[:limit], False


#: Matched spans longer than this (in words) are hard for a small model to keep word for word in a
#: phrase; a ``*`` gap in a long review can stretch a two-element pattern over a paragraph.
SHORT_SPAN_WORDS = 12
#: A stored pattern whose F1 lies within this of the best matching one may be chosen for being simpler.
F1_MARGIN = 0.1


def _complexity(pattern: str) -> int:
    """Elements and alternatives of a pattern (``*`` gaps not counted)."""
    return sum(1 for part in re.split(r"[+|]", pattern) if part.strip() and part.strip() != "*")


def patterns_for(project: Project, dataset_id: int, examples: Mapping[int, Mapping[str, Any]],
                 matcher: Matcher) -> dict[int, tuple[str, str]]:
    """``{example id: (pattern, matched span)}``: a stored pattern of its label that matches it.

    The analyst's own pattern wins when it matches. Among synthesized ones, those whose F1 lies
    within :data:`F1_MARGIN` of the best matching pattern are candidates, and the one with a
    short matched span (at most :data:`SHORT_SPAN_WORDS` words), then the fewest elements and
    alternatives, then the best F1 is chosen: a long review otherwise gets a pattern whose match
    spans many words, which the LLM must rewrite around and rarely keeps (VT filter benchmark).
    """
    from engine.patterns.store import load_patterns

    by_label: dict[str, list[Any]] = {}
    for p in load_patterns(project, dataset_id):
        by_label.setdefault(p.label, []).append(p)
    out = {}
    for i, row in examples.items():
        text = str(row.get("text") or row.get("hypothesis") or "")  # a pair's pattern is its hypothesis's
        found = []
        for rank, stored in enumerate(by_label.get(str(row["label"]), [])):
            hit = matcher.find(stored.pattern, text)
            if hit is None:
                continue
            if stored.source != "synthesized":
                found = [(rank, stored, hit)]
                break
            found.append((rank, stored, hit))
        if not found:
            continue
        if found[0][1].source == "synthesized":
            best = max((f[1].f1 or 0.0) for f in found)
            near = {f[0] for f in found if (f[1].f1 or 0.0) >= best - F1_MARGIN}
            found.sort(key=lambda f: (f[0] not in near, len(f[2].text.split()) > SHORT_SPAN_WORDS,
                                      _complexity(f[1].pattern), -(f[1].f1 or 0.0), f[0]))
        _rank, stored, hit = found[0]
        out[i] = (stored.pattern, hit.text)
    return out


def generate_variations(
    project: Project,
    dataset_id: int,
    example_ids: Sequence[int] | None,
    llm_config: LLMConfig,
    *,
    settings: VariationSettings | None = None,
    patterns: Mapping[int, str] | None = None,
    judge: Sequence[str] = (),
    backend: ChatBackend | None = None,
    task: str | None = None,
    chunk_size: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> VariationResult:
    """Make one pattern-keeping counterfactual per example and target label; store and judge each.

    Parameters
    ----------
    project, dataset_id, example_ids
        The examples (``None``: every example of the dataset). Of a pair, the hypothesis is
        matched and edited, the premise kept (prompt ``vt_edit_pair``).
    llm_config, backend
        The LLM (an existing backend may be passed).
    patterns
        ``{example id: pattern}``; examples not in it use the best stored pattern of their
        label that matches them (see :func:`patterns_for`).
    judge
        Ensemble members that judge each candidate (verification checks run either way).

    Raises
    ------
    GenerationConfigError
        Bad settings.
    LLMError
        A failure every request would share (refused key, no server): stopped at once.
    Cancelled
        Finished chunks are stored.
    """
    from engine.generation.job import rate_text
    from engine.counterbias.guided import _read, wanted_label
    from engine.counterbias.leak import LEAK_SOURCES, LeakGuard
    from engine.counterbias.settings import GenerateSettings
    from engine.counterbias.verify import judge_candidates
    from engine.llm.base import ChatRequest, ChatResult
    from engine.llm.cache import CachedClient
    from engine.llm.prompts import load_prompt
    from engine.llm.registry import create_backend
    from engine.patterns.match import Matcher
    from engine.store.runs import recorded_run

    token = ensure_token(cancel)
    settings = settings or VariationSettings()
    started = time.perf_counter()
    dataset = project.dataset(dataset_id)
    pair = dataset.task == "pair"
    edited = edited_field(dataset.task)
    ids = ([int(r["id"]) for r in project.iter_examples(dataset.id)] if example_ids is None
           else list(dict.fromkeys(int(i) for i in example_ids)))
    examples = {int(r["id"]): dict(r) for r in project.examples(ids)}
    matcher = Matcher(settings.soft)
    chosen = patterns_for(project, dataset.id, {i: r for i, r in examples.items() if i not in (patterns or {})},
                          matcher)
    for i, spec in (patterns or {}).items():
        if int(i) in examples:
            hit = matcher.find(spec, str(examples[int(i)][edited] or ""))
            if hit is not None:
                chosen[int(i)] = (spec, hit.text)
    key = settings.key()
    done = {(int(r["example_id"]), r["target_label"]) for r in project.db.query(
        "SELECT example_id, target_label FROM candidates WHERE method = ? AND status != 'failed' "
        "AND json_extract(meta, '$.settings_key') = ?", [METHOD, key])}
    result = VariationResult(no_pattern=sum(1 for i in ids if i in examples and i not in chosen))
    jobs = [(i, t) for i in ids if i in chosen
            for t in targets_for(str(examples[i]["label"]), dataset.labels, settings.targets)]
    todo = [(i, t) for i, t in jobs if (i, t) not in done]
    result.skipped = len(jobs) - len(todo)
    task = task or GenerateSettings().task_description(dataset.labels)
    ask, repair = load_prompt("vt_phrases"), load_prompt("vt_edit_repair")
    edit = load_prompt("vt_edit_pair" if pair else "vt_edit")
    guard = LeakGuard.from_prompts(LEAK_SOURCES[METHOD])
    own = backend is None
    chat_backend = backend or create_backend(llm_config)
    client = CachedClient(chat_backend, project)
    params = {"llm": llm_config.to_dict(), "settings": dataclasses.asdict(settings), "settings_key": key,
              "examples": len(ids), "prompts": {p.name: p.sha256[:12] for p in (ask, edit, repair)}}
    chunk = chunk_size or max(4, 2 * int(llm_config.concurrency))
    labels = ", ".join(dataset.labels)
    with closing(chat_backend) if own else nullcontext(), recorded_run(project, METHOD, dataset.id, params) as run:
        result.run_id = run.id
        gen_progress = scaled(progress, 0.0, 0.9)
        t0 = time.perf_counter()
        for start in range(0, len(todo), chunk):
            token.raise_if_cancelled()
            part = todo[start : start + chunk]
            sampling = [{"temperature": settings.temperature, "max_tokens": settings.max_tokens,
                         "seed": settings.seed + int(hashlib.sha256(f"{i}:{t}".encode()).hexdigest()[:6], 16) % 1000}
                        for i, t in part]
            step1 = client.chat_many([ChatRequest(ask.render(
                task=task, labels=labels, pattern=chosen[i][0], matched=chosen[i][1], label=str(examples[i]["label"]),
                target=t, n=str(settings.phrases)), p) for (i, t), p in zip(part, sampling, strict=True)], cancel=token)
            result.sent += step1.sent
            outcome: list[dict[str, Any]] = []
            for (i, t), answer in zip(part, step1.results, strict=True):
                if not isinstance(answer, ChatResult):
                    outcome.append({"problem": f"{answer.code} {answer.message}", "error": {
                        "step": "phrases", "message": answer.message, "hint": answer.hint,
                        "retriable": answer.retriable}})
                    continue
                phrases, cannot = parse_phrases(answer.text or "", chosen[i][0], matcher, settings.phrases)
                if cannot:
                    result.cannot += 1
                    outcome.append({"problem": "The LLM answered that no phrase can keep the pattern and express "
                                    f"{t}.", "cannot": True, "raw_phrases": answer.text})
                elif not phrases:
                    outcome.append({"problem": f"None of the phrases it wrote matches {chosen[i][0]}.",
                                    "raw_phrases": answer.text})
                else:
                    outcome.append({"phrases": phrases, "raw_phrases": answer.text})
            ready = [k for k, o in enumerate(outcome) if "phrases" in o]
            messages = {k: (edit.render(task=task, labels=labels, label=str(examples[part[k][0]]["label"]),
                                        target=wanted_label(part[k][1]) if pair else part[k][1],
                                        phrases=" | ".join(outcome[k]["phrases"]),
                                        text=examples[part[k][0]][edited] or "",
                                        **({"premise": examples[part[k][0]]["premise"] or ""} if pair else {})),
                              sampling[k]) for k in ready}
            step2 = client.chat_many([ChatRequest(*messages[k]) for k in ready], cancel=token)
            result.sent += step2.sent
            retry = []
            for k, answer in zip(ready, step2.results, strict=True):
                i, t = part[k]
                item = _read(answer, examples[i], edited, dataset.labels, guard, ChatResult)
                item.update(phrases=outcome[k]["phrases"], raw_phrases=outcome[k]["raw_phrases"])
                item["problem"] = item.get("problem") or _pattern_problem(item.get("text") or "", chosen[i][0], matcher)
                outcome[k] = item
                if item["problem"] and "error" not in item:
                    retry.append(k)
            if retry:
                requests = [ChatRequest([*messages[k][0], {"role": "assistant", "content": (outcome[k].get("raw") or "")[:4000]},
                                         *repair.render(problem=outcome[k]["problem"], target=part[k][1],
                                                        phrases=" | ".join(outcome[k]["phrases"]))], messages[k][1])
                            for k in retry]
                second = client.chat_many(requests, cancel=token)
                result.sent += second.sent
                for k, answer in zip(retry, second.results, strict=True):
                    i, t = part[k]
                    again = _read(answer, examples[i], edited, dataset.labels, guard, ChatResult)
                    again["problem"] = again.get("problem") or _pattern_problem(again.get("text") or "", chosen[i][0],
                                                                                matcher)
                    again.update(phrases=outcome[k]["phrases"], raw_phrases=outcome[k]["raw_phrases"],
                                 repaired_from=outcome[k]["problem"])
                    outcome[k] = again
            made, failed = project.writer.run(_store, run.id, key, part, outcome, examples, chosen, llm_config,
                                              edited)
            result.created.extend(made)
            result.failed.extend(failed)
            finished = start + len(part)
            gen_progress(finished / max(len(todo), 1),
                         f"vt: {finished}/{len(todo)} counterfactuals{rate_text(finished, t0, len(todo))}")
        if result.created:
            judge_candidates(project, result.created, list(judge), progress=scaled(progress, 0.9, 1.0), cancel=token)
        result.seconds = time.perf_counter() - started
        run.result = result.summary()
        run.message = f"{len(result.created)} counterfactuals, {len(result.failed)} failed"
    progress(1.0, f"vt: {len(result.created)} counterfactuals, {len(result.failed)} failed, "
                  f"{result.no_pattern} examples without a pattern")
    return result


def _pattern_problem(text: str, pattern: str, matcher: Matcher) -> str | None:
    if text and not matcher.matches(pattern, text):
        return f"It no longer matches the pattern {pattern}: keep one of the phrases word for word."
    return None


def _store(conn: sqlite3.Connection, run_id: int, key: str, part: Sequence[tuple[int, str]],
           outcome: Sequence[dict[str, Any]], examples: Mapping[int, dict[str, Any]],
           chosen: Mapping[int, tuple[str, str]], llm: LLMConfig, edited: str = "text") -> tuple[list[int], list[int]]:
    from engine.text.distance import word_edit_distance

    created, failed = [], []
    stamp = now()
    for (i, target), item in zip(part, outcome, strict=True):
        conn.execute("DELETE FROM candidates WHERE example_id = ? AND target_label = ? AND method = ? "
                     "AND status = 'failed' AND json_extract(meta, '$.settings_key') = ?", (i, target, METHOD, key))
        original = examples[i][edited] or ""
        ok = not item.get("problem")
        text = item.get("text") if ok else None
        error = None if ok else (item.get("error") or {
            "step": "cannot" if item.get("cannot") else "edit", "message": item["problem"],
            "hint": "A pattern that cannot carry this label is a valid finding." if item.get("cannot")
            else "Generate again: a new sample may succeed.", "retriable": not item.get("cannot")})
        meta = {
            "settings_key": key, "run_id": run_id, "mode": METHOD, "backend": llm.backend, "model": llm.model,
            "original_label": examples[i]["label"], "pattern": chosen[i][0], "matched": chosen[i][1],
            "phrases": item.get("phrases") or [], "generated": {edited: text} if ok else {},
            "raw": (item.get("raw") or item.get("raw_phrases") or "")[:4000], "repaired_from": item.get("repaired_from"),
            "error": error, "edit_distance": {edited: round(word_edit_distance(original, text), 4)} if ok else {},
        }
        cursor = conn.execute(
            "INSERT INTO candidates (run_id, example_id, method, target_label, text, premise, hypothesis, scores, "
            "meta, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?)",
            (run_id, i, METHOD, target, *candidate_fields(edited, text, examples[i]),
             json.dumps(meta, ensure_ascii=False), "proposed" if ok else "failed", stamp))
        (created if ok else failed).append(int(cursor.lastrowid))
    return created, failed
