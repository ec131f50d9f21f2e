"""CoBA counterbias generation, the job: (triples →) edited sentences (or reconstruction) → candidates.

Two modes (:attr:`GenerateSettings.mode`). **edit** (the default) keeps the original text and
replaces only the sentences that hold a principal content word (with ``edit_triples``, also those
holding a principal triple):

1. the sentences holding a word of the vote's W_p are chosen (with ``edit_triples`` the
   example's triples are extracted here when missing and categorised per sentence against W_p and
   W_s; without, no triple request is sent); a sentence holding a rating ("9/10") that goes with the original label
   (:mod:`engine.text.ratings`, learned from the train split) is edited too, with the rating
   named to change, and an answer that keeps such a rating is repaired (*rating kept*);
2. each such sentence goes to the LLM alone, as written (prompt ``edit_sentence``), with
   its neighbours as context, its principal words to change and its spurious and gendered words
   to copy verbatim; the answer is checked (:func:`~engine.counterbias.edit.check_sentence`:
   changed, not far longer, every kept word present, nothing of the prompt's examples — a
   *prompt leak*) and repaired once (``edit_sentence_repair``) naming what was wrong, else the
   sentence stays as it was (its ``failure`` says why); the slot fails, with that reason, only
   when none of its sentences could be edited. Sentences without a principal word that the
   sentence reader (``sentence_reader``: the LLM by default, :mod:`~.sentence_reading`) reads as
   the original label are edited too (``edit_polar``); for each sentence it reads so, the LLM is
   asked once which words make it (``edit_opinion``, :mod:`~.opinion_words`): those are named to
   change instead of the principal words, and a spurious word among them is released (the
   edit may change it; ``released`` in the edit's record) — with ``edit_hold`` (default) only after a first
   try that copies it and turns the opinion around it (prompt ``edit_sentence_hold``; ``held``, ``hold``)
   failed the checks or was not read as the target. A sentence holding a principal word
   that the reader does *not* read as the original label is asked the same; when the LLM marks no
   opinion word in it, it stays as written (``meta.fields[].plain``): named words such as
   "horror", "summer" or "cable" were otherwise swapped for other facts ("comedy", "fall",
   "VHS") — unless that leaves the text nothing to edit. A usable edit that the reader does not
   see move toward the target (``edit_moved``: a synonym where the opposite was asked) is
   repaired once too, and the repair kept only if it reads more as
   the target. A sentence still unusable after its repair, or still unmoved, gets one fresh try
   (``edit_fresh``: a new seed; the first request again, or for a sentence its edits did not move
   the stronger prompt ``edit_sentence_strong``). A sentence with marked opinion words that is still unedited or
   unmoved after that gets a phrase swap (``edit_swap``, :mod:`~.phrase_swap`): the LLM gives the opposite of
   each marked phrase, the phrases are replaced in the sentence as written, and the result is kept when it passes
   the checks and reads more as the target. An edit still unmoved after all of that is dropped (a synonym swap
   only makes the candidate less minimal): the sentence stays as written — or, when the reader read it as the
   original label and it holds no word to keep, it is removed (``edit_remove``). Gendered words are swapped
   afterwards, in the edited and the untouched sentences alike (the LLM never sees the swapped
   text: a small model wrote the original words back);
3. the candidate is the original with just those sentences replaced (every other byte kept);
   with the LLM reader, its sentences that still speak for the original label are recorded
   (``meta.fields[].residual``, the ``residual`` verification check);
4. flip strength: a candidate whose strongest principal words are still there, or that the
   ensemble still judges as the original label, gets one repair request per affected sentence
   (``edit_flip_repair``) naming the remaining words; the repaired sentence is used when it
   passes the same checks and the members do not read it as less the target than the edit it
   replaces. Every repair is recorded in ``meta.repairs``.

**reconstruct** is the paper's full reconstruction, step by step below; it gets the same
spurious-word and prompt-leak checks. For every example, target label ŷ ≠ y and sample ``i``
(one *candidate slot*):

1. the example's triples (:func:`engine.counterbias.triples.extract_triples`, run here for
   examples that have none yet) are categorised against the ensemble vote's W_p and W_s
   (:mod:`engine.counterbias.manipulate`); with no principal triple in a field, every
   non-spurious triple of it is rewritten instead (recorded as ``fallback``);
2. the principal triples of each edited field go to the LLM in one request (prompt
   ``rewrite``) that must return the same number of ``subject | predicate | object`` lines,
   not all unchanged; one repair request (``rewrite_repair``) saying what was wrong if not;
3. spurious triples are kept verbatim, gendered words are swapped, normal triples are
   shuffled and dropped (seeded per slot);
4. the LLM writes the text from the ordered triples (prompt ``reconstruct``, which does not
   name the target label); the answer is cleaned (quotes, "Text:" labels) and rejected when
   empty, a list of triples, only a label name, far longer than the original, or missing most
   of the facts' words; one repair request (``reconstruct_repair``) if so;
5. the candidate is stored at once in ``candidates`` with every intermediate step in ``meta``,
   and its word-level edit distance to the original (``meta.edit_distance``).

Failures are per slot: a ``candidates`` row with status ``failed``, the error and whether a
retry may pass; a later run retries failed slots and skips the others (resume). A slot that
failed on a transport error is retried with the same requests (answers already received come
from the cache); one that failed on an *unusable* answer is retried with a new seed (and a
temperature of at least :data:`RETRY_TEMPERATURE`), since the same request would only return
the same cached answer. Nothing is raised out of the job except
:class:`~engine.errors.Cancelled` and errors that stop every slot alike (no vote, unknown backend).
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.attribution.explainers import default_judges, judges_in_training
from engine.attribution.word_prior import label_rating_sides, label_vocabulary, label_word_z
from engine.counterbias.edit import (
    FUNCTION_WORDS,
    Check,
    SentenceEdit,
    assemble,
    check_sentence,
    clean_sentence,
    fact_words,
    has_word,
    label_lean,
    missing_words,
    surface_words,
)
from engine.counterbias.leak import LEAK_SOURCES, LeakGuard
from engine.counterbias.manipulate import (
    arrange,
    categorize,
    format_triples,
    gender_map,
    matched_words,
    names_person,
    swap_gender,
    swap_triple,
)
from engine.counterbias.opinion_words import OpinionFinder
from engine.counterbias.phrase_swap import PhraseSwapper, swap_phrases
from engine.counterbias.sentence_reading import MIN_WORDS_MEMBERS, create_reader, residual_sentences
from engine.counterbias.settings import GenerateSettings, GenerationConfigError, targets_for
from engine.counterbias.triple_store import current_rows, load_triples
from engine.counterbias.triples import extract_triples
from engine.llm.base import ChatBackend, ChatRequest, ChatResult, Failure, Message, Usage
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from engine.llm.triple_format import Triple, parse_triples
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store.locks import run_lock
from engine.store.runs import recorded_run
from engine.store.schema import now
from engine.text import normalize, segment
from engine.text.distance import word_edit_distance
from engine.text.ratings import against, suggestion
from engine.llm.guard import text_too_long
from engine.text.sentences import sentence_spans, split_sentences

if TYPE_CHECKING:
    from engine.store.project import DatasetInfo, Project

__all__ = ["GenerateResult", "clean_reconstruction", "generate_counterbias"]

METHOD = "coba"
PROMPTS = ("rewrite", "rewrite_repair", "reconstruct", "reconstruct_repair", "edit_sentence",
           "edit_sentence_repair", "edit_sentence_strong", "edit_flip_repair", "read_sentence", "opinion_words")


@dataclass
class FieldPlan:
    """One edited field of one slot, step by step (stored in the candidate's ``meta``)."""

    field: str
    original: str
    triples: list[Triple]
    categories: list[str]
    fallback: bool = False
    rewritten: list[Triple] = field(default_factory=list)
    swaps: list[tuple[str, str]] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    final: list[Triple] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    text: str | None = None
    sentence_of: list[int] = field(default_factory=list)
    principal: tuple[str, ...] = ()
    spurious: tuple[str, ...] = ()
    votes: dict[str, int] = field(default_factory=dict)
    keep: list[str] = field(default_factory=list)
    edits: list[SentenceEdit] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    flip: dict[str, Any] | None = None
    #: Sentences edited because the ensemble reads them alone as the original label (``edit_polar``).
    polar: list[int] = field(default_factory=list)
    #: Whether gendered words are swapped in this field (not when the text names a person).
    gender: bool = True
    #: Sentences of the finished text the sentence reader still reads as the original label (``None``: not read).
    residual: list[str] | None = None
    #: Sentences holding a principal word, not read as the original label, in which the LLM marked no opinion word:
    #: left as written.
    plain: list[int] = field(default_factory=list)

    @property
    def to_rewrite(self) -> list[int]:
        return [i for i, c in enumerate(self.categories) if c == "principal"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "triples": [list(t) for t in self.triples],
            "categories": self.categories,
            "fallback": self.fallback,
            "rewritten": [list(t) for t in self.rewritten],
            "gender_swaps": [list(s) for s in self.swaps],
            "order": self.order,
            "final_triples": [list(t) for t in self.final],
            "raw": [r[:4000] for r in self.raw],
            "keep": self.keep,
            "edits": [e.to_dict() for e in self.edits],
            "flip_repair": self.flip,
            "polar": self.polar,
            **({"plain": self.plain} if self.plain else {}),
            "gender_swapped": self.gender,
            **({"residual": self.residual} if self.residual is not None else {}),
        }


@dataclass
class Slot:
    """One candidate to make: example × target label × sample."""

    example: dict[str, Any]
    target: str
    sample: int
    fields: list[FieldPlan]
    keep_words: list[str]
    error: dict[str, Any] | None = None
    attempt: int = 0
    repairs: dict[str, int] = field(default_factory=dict)
    mode: str = "edit"
    #: How a text leans to the target label (the labels' word z-statistics), or ``None``.
    lean: Any = None
    #: Word z-statistics toward the example's own label: words to name when a sentence holds no principal word.
    cues: dict[str, float] = field(default_factory=dict)
    #: Which label goes with which end of a rating scale ("10/10"): :func:`~engine.text.ratings.rating_sides`.
    sides: dict[str, str] = field(default_factory=dict)
    #: The dataset's words, accepted besides the English word list when an edit's new words are looked up.
    vocabulary: frozenset[str] = frozenset()
    #: Word z-statistics toward the target label: principal words this high already speak for it.
    target_z: dict[str, float] = field(default_factory=dict)

    def fail(self, step: str, message: str, *, retriable: bool, hint: str = "", quality: bool = False,
             reason: str = "") -> None:
        """Record the first failure; ``quality``: the LLM answered, but unusably (a retry varies the seed).

        ``reason`` is a short key (``"missing words"``, ``"prompt leak"``, ``"unchanged"``, …).
        """
        if self.error is None:
            self.error = {"step": step, "message": message, "hint": hint, "retriable": retriable,
                          "quality": quality, "reason": reason or ("transport" if not quality else "unusable")}

    def repaired(self, kind: str, n: int = 1) -> None:
        self.repairs[kind] = self.repairs.get(kind, 0) + n


@dataclass
class GenerateResult:
    """What :func:`generate_counterbias` did."""

    run_id: int
    created: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    skipped: int = 0
    triples_failed: list[int] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    sent: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    #: The members that judged the candidates, and those a running training job had not stored yet (they
    #: judge later candidates; ``verify`` adds their verdict to these).
    judges: list[str] = field(default_factory=list)
    judges_training: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "created": len(self.created),
            "failed": len(self.failed),
            "skipped": self.skipped,
            "triples_failed": len(self.triples_failed),
            "sent": self.sent,
            "cache_hits": self.cache_hits,
            "usage": self.usage.to_dict(),
            **({"llm_time": self.usage.time_split()} if self.usage.time_split() else {}),
            "seconds": round(self.seconds, 2),
            "judges": list(self.judges),
            "judges_training": list(self.judges_training),
        }


# ---------------------------------------------------------------------------- the job


def _rate(done: int, started: float, total: int) -> str:
    """`` · 3.2 candidates/min, 12 min left`` from the pace so far (empty before the first batch)."""
    elapsed = time.perf_counter() - started
    if done <= 0 or elapsed <= 0:
        return ""
    per_min = done / elapsed * 60
    left_min = (total - done) / per_min if per_min > 0 else float("inf")
    left = f"{left_min:.0f} min left" if left_min >= 1 else "under a minute left"
    return f" · {per_min:.1f} candidates/min, {left}"


def generate_counterbias(
    project: Project,
    dataset_id: int,
    example_ids: Sequence[int] | None,
    llm_config: LLMConfig,
    *,
    settings: GenerateSettings | None = None,
    vote_set_id: int | None = None,
    judge: Sequence[str] | None = None,
    backend: ChatBackend | None = None,
    chunk_size: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> GenerateResult:
    """Make counterbias candidates for examples of a dataset version (see the module doc).

    Parameters
    ----------
    project, dataset_id
        The dataset version.
    example_ids
        Examples to augment (``None``: all of the dataset).
    llm_config
        The LLM (recorded in the run and in every candidate's provenance).
    settings
        Targets, samples, sampling, shuffle/drop, gender swap, fields.
    vote_set_id
        The vote giving W_p / W_s (default: the newest vote on this dataset or its parent).
    judge
        Members judging the new candidates, each chunk as soon as it is stored (default: the vote's members;
        ``()``: no judging).
    backend
        An existing backend to use instead of creating one (not closed here).
    chunk_size
        Slots per batch of LLM calls; each batch is stored before the next starts, and the rate
        and time left are shown after each (default: twice the LLM's concurrency, at least 4 —
        enough to keep every parallel request busy, small enough that the first rate shows early).

    Raises
    ------
    GenerationConfigError
        No vote exists for the dataset, or the settings do not fit it.
    RunBusyError
        Another ``generate`` run on this dataset is still running (nothing is sent).
    LLMError
        A failure every request would share (refused key, unreachable server, unknown model):
        the run stops at the first one; what was answered before is kept.
    Cancelled
        When ``cancel`` is set; finished slots are stored, the run is marked cancelled.
    """
    from engine.llm.registry import create_backend

    token = ensure_token(cancel)
    started = time.perf_counter()
    settings = settings or GenerateSettings()
    dataset = project.dataset(dataset_id)
    fields = settings.edit_fields(dataset.task)
    vote_set = _vote_source(project, dataset, vote_set_id)
    ids = ([int(r["id"]) for r in project.iter_examples(dataset.id)] if example_ids is None
           else list(dict.fromkeys(int(i) for i in example_ids)))
    own_backend = backend is None
    chat_backend = backend or create_backend(llm_config)
    key = settings.key()
    params = {
        "llm": llm_config.to_dict(), "settings": settings.to_dict(), "settings_key": key,
        "vote_set_id": vote_set["id"], "examples": len(ids),
        "prompts": {n: load_prompt(n).sha256[:12] for n in PROMPTS},
    }
    client = CachedClient(chat_backend, project)
    with (
        closing(chat_backend) if own_backend else nullcontext(),
        run_lock(project, "generate", dataset.id, dataset_name=dataset.name) as run_guard,
        recorded_run(project, "generate", dataset.id, params) as run,
    ):
        run_guard.set_run(run.id)
        result = GenerateResult(run_id=run.id)
        try:
            if settings.uses_triples:
                triples = extract_triples(project, dataset.id, ids, llm_config, backend=chat_backend,
                                          progress=scaled(progress, 0.0, 0.3), cancel=token)
                result.triples_failed = triples.failed_ids
            votes = _votes(project, dataset, vote_set, vote_set_id is not None, ids)
            slots, result.skipped = _plan(project, dataset, ids, votes, settings, key, fields)
            mapping = _gender_mapping() if settings.swap_gender else {}
            members = (list(judge) if judge is not None
                       else default_judges(project, dataset.id, list(vote_set["params"].get("models") or [])))
            result.judges = members
            result.judges_training = [] if judge is not None else judges_in_training(project, dataset.id)
            guard = LeakGuard.from_prompts(LEAK_SOURCES[settings.mode])
            label_fn = _judge_fn(project, members, token) if settings.mode == "edit" and settings.repair_flip else None
            polar_fn = (create_reader(settings.sentence_reader, project, client, members, dataset.labels,
                                      settings.task_description(dataset.labels), token)
                        if settings.mode == "edit" and "text" in fields else None)
            finder = (OpinionFinder(client, dataset.labels, settings.task_description(dataset.labels), token)
                      if settings.mode == "edit" and settings.edit_opinion and polar_fn is not None else None)
            swapper = (PhraseSwapper(client, dataset.labels, settings.task_description(dataset.labels), token)
                       if finder is not None and settings.edit_swap else None)
            if settings.mode == "edit":
                by_label = label_word_z(project, dataset.id)
                sides = label_rating_sides(project, dataset.id, field="text") if "text" in dataset.text_fields else {}
                vocabulary = label_vocabulary(project, dataset.id)
                lean = polar_fn is None or settings.edit_moved <= 0
                for slot in slots:
                    slot.cues = by_label.get(str(slot.example["label"]), {})
                    slot.target_z = by_label.get(slot.target, {})
                    slot.sides = sides
                    slot.vocabulary = vocabulary
                    if lean and slot.target in by_label:
                        # without the members' reading of each sentence, the labels' word z-statistics say whether
                        # an edited sentence leans further from its target than before (a cruder test: it
                        # refused "not as solid as" -> "much stronger than")
                        slot.lean = label_lean(by_label[slot.target])
            gen_progress = scaled(progress, 0.3 if settings.uses_triples else 0.0, 1.0)
            gen_started = time.perf_counter()
            chunk_size = chunk_size or max(4, 2 * int(llm_config.concurrency))
            for start in range(0, len(slots), chunk_size):
                token.raise_if_cancelled()
                chunk = slots[start : start + chunk_size]
                if settings.mode == "edit":
                    _edit_chunk(client, chunk, dataset, settings, mapping, token, guard, label_fn, polar_fn,
                                finder, swapper)
                else:
                    _run_chunk(client, chunk, dataset, settings, mapping, token, guard)
                created, failed = project.writer.run(_store_slots, run.id, chunk, key, llm_config, vote_set["id"])
                result.created.extend(created)
                result.failed.extend(failed)
                if members and created:
                    # judged as they are made: a run cancelled or killed later leaves no candidate unjudged
                    # (the members' cost counts in the rate and ETA below)
                    from engine.counterbias.verify import judge_candidates

                    judge_candidates(project, created, members, cancel=token)
                done = start + len(chunk)
                gen_progress(done / max(len(slots), 1),
                             f"counterbias: {done}/{len(slots)} candidates{_rate(done, gen_started, len(slots))}")
            progress(1.0, f"counterbias: {len(result.created)} candidates, {len(result.failed)} failed")
        finally:
            total = client.total
            result.usage, result.sent, result.cache_hits = total.usage, total.sent, total.hits
            result.seconds = time.perf_counter() - started
            run.result = summary = result.summary()
            run.message = f"{summary['created']} candidates, {summary['failed']} failed"
    return result


def _judge_fn(project: Project, members: Sequence[str], token: CancelToken) -> Any:
    """Majority labels of candidate rows by ``members`` (``None`` without members)."""
    if not members:
        return None
    from engine.counterbias.verify import ensemble_labels

    def labels(rows: list[dict[str, Any]]) -> list[str]:
        return ensemble_labels(project, members, rows, cancel=token)

    return labels


def _vote_source(project: Project, dataset: DatasetInfo, vote_set_id: int | None) -> dict[str, Any]:
    """The vote set to read W_p / W_s from (the given one, or the newest on the dataset/its parent)."""
    from engine.attribution.vote_store import vote_sets

    if vote_set_id is not None:
        found = [v for v in vote_sets(project) if v["id"] == vote_set_id]
    else:
        found = [v for d in (dataset.id, dataset.parent_id) if d is not None for v in vote_sets(project, d)]
        found.sort(key=lambda v: -int(v["id"]))
    if not found:
        raise GenerationConfigError(
            f"No principal/spurious words for dataset {dataset.name!r}"
            + (f" (vote set {vote_set_id} does not exist)." if vote_set_id is not None else "."),
            "Train the ensemble and run the vote first (Word importance tab, or 'counterbias train' then "
            "'counterbias vote').",
        )
    return found[0]


def _votes(project: Project, dataset: DatasetInfo, vote_set: dict[str, Any], explicit: bool, ids: Sequence[int]) -> dict:
    from engine.attribution.vote_store import latest_votes, load_votes

    if explicit:
        return load_votes(project, int(vote_set["id"]), ids)
    return latest_votes(project, [d for d in (dataset.id, dataset.parent_id) if d is not None], ids)


def _gender_mapping() -> dict[str, str]:
    from engine.attribution.wordlists import swap_pairs

    return gender_map(swap_pairs())


# ---------------------------------------------------------------------------- planning


def _plan(project: Project, dataset: DatasetInfo, ids: Sequence[int], votes: dict, settings: GenerateSettings,
          key: str, fields: Sequence[str]) -> tuple[list[Slot], int]:
    """Slots still to make (failed ones again), and how many already exist."""
    existing = _existing(project, ids, key)
    slots: list[Slot] = []
    skipped = 0
    for row in project.examples(ids):
        stored = load_triples(project, int(row["id"])) if settings.uses_triples else {}
        for target in targets_for(row["label"], dataset.labels, settings.targets):
            for sample in range(settings.samples):
                status, attempt, quality = existing.get((int(row["id"]), target, sample), (None, 0, False))
                if status not in (None, "failed"):
                    skipped += 1
                    continue
                # after an unusable answer the same request would only hit the cache: vary it
                slot = Slot(row, target, sample, [], [], attempt=attempt + 1 if quality else attempt,
                            mode=settings.mode)
                for name in fields:
                    sentences = stored.get(name, [])
                    triples = [t for sentence in sentences for t in sentence]
                    vote = votes.get((int(row["id"]), name))
                    plan = FieldPlan(name, row.get(name) or "", triples, [],
                                     sentence_of=[i for i, sentence in enumerate(sentences) for _ in sentence])
                    slot.fields.append(plan)
                    if too_long := text_too_long(plan.original):  # an edit of it would not be meaningful
                        slot.fail("input", f"Example {row['id']} ({name}): {too_long}", retriable=False,
                                  hint="Shorten or split this text; the other examples are generated.", reason="too long")
                        continue
                    if vote is None:
                        slot.fail("vote", f"Example {row['id']} ({name}) has no principal/spurious words yet.",
                                  retriable=True, hint="Explain these examples (vote) and generate again.")
                        continue
                    if not triples and settings.uses_triples:
                        slot.fail("triples", f"Example {row['id']} ({name}) has no triples.", retriable=True,
                                  hint="The triple step failed for it; generate again to retry.")
                        continue
                    plan.principal, plan.spurious = tuple(vote.principal), tuple(vote.spurious)
                    plan.votes = dict(vote.votes)
                    plan.categories = categorize(triples, vote.principal, vote.spurious)
                    if triples and "principal" not in plan.categories:
                        plan.fallback = True
                        plan.categories = ["principal" if c == "normal" else c for c in plan.categories]
                        if "principal" not in plan.categories:  # only spurious triples: rewrite them all
                            plan.categories = ["principal"] * len(triples)
                    slot.keep_words.extend(matched_words(plan.original, vote.spurious))
                slot.keep_words = list(dict.fromkeys(slot.keep_words))
                slots.append(slot)
    return slots, skipped


def _existing(project: Project, ids: Sequence[int], key: str) -> dict[tuple[int, str, int], tuple[str, int, bool]]:
    """``(example, target, sample) -> (status, attempt, failed on an unusable answer)`` of stored slots."""
    rows = project.db.execute(
        "SELECT example_id, target_label, json_extract(meta, '$.sample') AS sample, status, "
        "json_extract(meta, '$.attempt'), json_extract(meta, '$.error.quality') FROM candidates "
        "WHERE method = ? AND json_extract(meta, '$.settings_key') = ? "
        "AND example_id IN (SELECT value FROM json_each(?))",
        (METHOD, key, json.dumps([int(i) for i in ids])),
    ).fetchall()
    return {(int(r[0]), r[1], int(r[2] or 0)): (r[3], int(r[4] or 0), bool(r[5])) for r in rows}


# ---------------------------------------------------------------------------- LLM steps


#: Least temperature of a retry after an unusable answer (at temperature 0 a new seed changes nothing).
RETRY_TEMPERATURE = 0.7


def _params(settings: GenerateSettings, slot: Slot) -> dict[str, Any]:
    """Sampling of a slot's requests: sample ``i`` uses ``seed + i``; retry ``n`` adds ``1000 n``."""
    temperature = settings.temperature if slot.attempt == 0 else max(settings.temperature, RETRY_TEMPERATURE)
    return {"temperature": temperature, "seed": settings.seed + slot.sample + 1000 * slot.attempt,
            "max_tokens": settings.max_tokens}


def _keep_words(text: str, plan: FieldPlan, mapping: dict[str, str]) -> list[str]:
    """The spurious words of ``text`` as written there (gender-swapped when swapping), principal ones excepted."""
    principal = {w.lower() for w in surface_words(text, plan.principal)}
    # a gendered word is swapped as it reads in its sentence ("her sister" -> "his", "told her" -> "him"),
    # not alone: the swap of the whole text says what each occurrence became
    in_context: dict[str, str] = {}
    if mapping:
        for a, b in swap_gender(text, mapping)[1]:
            in_context.setdefault(a, b)
    out = []
    for word in surface_words(text, plan.spurious):
        if word.lower() not in principal:
            out.append(in_context.get(word, swap_gender(word, mapping)[0]) if mapping else word)
    return out


def _run_chunk(client: CachedClient, slots: list[Slot], dataset: DatasetInfo, settings: GenerateSettings,
               mapping: dict[str, str], token: CancelToken, guard: LeakGuard | None = None) -> None:
    """Reconstruct mode: rewrite the principal triples, arrange, write the text from the triples."""
    task = settings.task_description(dataset.labels)
    live = [(s, f) for s in slots if s.error is None for f in s.fields]

    # 1. rewrite the principal triples (one request per field), with one repair
    rewrite = load_prompt("rewrite")
    requests = [ChatRequest(rewrite.render(
        task=task, labels=", ".join(dataset.labels), context=_context(s, f), label=s.example["label"],
        target=s.target, keep=", ".join(s.keep_words) or "(none)",
        triples=format_triples(f.triples[i] for i in f.to_rewrite)), _params(settings, s)) for s, f in live]
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
            plan.keep = _keep_words(plan.original, plan, mapping if plan.gender else {})
            plan.final = [current[i] for i in plan.order]

    # 3. reconstruct the text from the ordered triples
    live = [(s, f) for s in slots if s.error is None for f in s.fields]
    reconstruct = load_prompt("reconstruct")
    requests = [ChatRequest(reconstruct.render(task=task, words=str(_length_hint(f)), triples=format_triples(f.final)),
                            _params(settings, s)) for s, f in live]
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


# ---------------------------------------------------------------------------- edit mode

#: Principal words counted as the strongest: those with the most votes, at most this many.
STRONGEST = 3


def _content(words: Sequence[str]) -> list[str]:
    """``words`` without function words (a vote may rank "this" or "how"; naming them misleads the LLM)."""
    return [w for w in words if w.lower() not in FUNCTION_WORDS]


def _chosen_sentences(plan: FieldPlan, sentences: Sequence[str], polar: Iterable[int] = (),
                      rated: Iterable[int] = ()) -> list[int]:
    """Sentences to rewrite: those holding a principal triple or a principal content word, ``polar``
    ones (read as the original label on their own) and ``rated`` ones (a rating such as "9/10" that
    goes with the original label); else all.

    A sentence holding a principal word goes in even when no triple of it does: the triples of a
    small LLM miss words, and a principal word left in an unedited sentence keeps the label.
    """
    chosen = _principal_sentences(plan, sentences) | ((set(polar) | set(rated)) & set(range(len(sentences))))
    return sorted(chosen) or list(range(len(sentences)))


def _principal_sentences(plan: FieldPlan, sentences: Sequence[str]) -> set[int]:
    """The sentences holding a principal triple or a principal content word."""
    chosen = {plan.sentence_of[i] for i, c in enumerate(plan.categories)
              if c == "principal" and i < len(plan.sentence_of)} & set(range(len(sentences)))
    return chosen | {i for i, s in enumerate(sentences) if surface_words(s, _content(plan.principal))}


def _to_mark(plan: FieldPlan, sentences: Sequence[str], polar: Sequence[int], read: bool) -> list[int]:
    """The sentences whose opinion words the LLM marks: those read as the original label, and, when the sentences
    were ``read``, those holding a principal word (a sentence of neither kind is not edited)."""
    if plan.field != "text":
        return []
    return sorted(set(polar) | (_principal_sentences(plan, sentences) if read else set()))


def _sentences_as_written(text: str) -> tuple[str, list[tuple[int, int]], list[str]]:
    """The text's base, its sentences' spans in it, and the sentences as written there (what the LLM edits)."""
    sentences = split_sentences(text)
    if not sentences:
        return text, [], []
    base, spans = sentence_spans(text, sentences)
    return base, spans, [base[a:b] for a, b in spans]


def _polar_sentences(polar_fn: Any, raw: Sequence[str], label: str, min_polar: float) -> list[int]:
    """The sentences the reader reads alone as ``label`` with at least ``min_polar`` (of the reader's ``min_words``
    or more: any length for the LLM, three words for the members)."""
    if polar_fn is None or min_polar <= 0 or not raw:
        return []
    shortest = getattr(polar_fn, "min_words", MIN_WORDS_MEMBERS)
    return [i for i, p in enumerate(polar_fn(list(raw), label))
            if p >= min_polar and len(raw[i].split()) >= shortest]


def _plan_edits(slot: Slot, plan: FieldPlan, mapping: dict[str, str], polar_fn: Any = None,
                min_polar: float = 1.0, finder: OpinionFinder | None = None,
                hold: bool = False) -> tuple[str, list[tuple[int, int]]] | None:
    """Fill ``plan.edits`` (the sentences to rewrite, as written); return the text's base and spans.

    With a ``finder``, a sentence read as the original label names its opinion words to change (not the
    principal words), and the spurious words among them are released (:mod:`engine.counterbias.opinion_words`) —
    with ``hold``, only once a first try that keeps them has failed (``held``; :func:`_hold_tries`). The edit's
    ``change`` and ``keep`` are always those of the words released: what the sentence is asked without the hold.
    """
    base, spans, raw = _sentences_as_written(plan.original)
    if not raw:
        slot.fail("edit", f"Example {slot.example['id']} ({plan.field}) has no sentence to edit.", retriable=False,
                  reason="no sentence")
        return None
    plan.gender = bool(mapping) and not names_person(plan.original)
    mapping = mapping if plan.gender else {}
    swaps = [swap_gender(sentence, mapping)[1] if mapping else [] for sentence in raw]  # tagged once per sentence
    plan.swaps = [pair for found in swaps for pair in found]
    # the LLM edits the sentences as written; the gender swap is applied to its answer (a model asked to
    # copy "the male lead" of a swapped text wrote "the female lead" back, and the edit was refused)
    plan.others = list(raw)
    label = str(slot.example["label"])
    polar: list[int] = []
    if plan.field == "text":
        polar = plan.polar = _polar_sentences(polar_fn, raw, label, min_polar)
    marked = _to_mark(plan, raw, polar, min_polar > 0) if finder else []
    opinions = dict(zip(marked, finder.find([(raw[i], label) for i in marked]), strict=True)) if finder else {}
    # a rating ("9/10") that goes with the original label is an opinion to turn, whatever the vote says
    ratings = ({i: [r.text for r in against(s, slot.target, str(slot.example["label"]), slot.sides)]
                for i, s in enumerate(raw)} if plan.field == "text" and slot.sides else {})
    rated = [i for i, found in ratings.items() if found]
    edits: list[SentenceEdit] = []
    spoken: list[SentenceEdit] = []  # sentences whose principal words all speak for the target already
    plain: list[SentenceEdit] = []  # principal sentences neither read as the label nor holding an opinion word
    for i in _chosen_sentences(plan, raw, polar, rated):
        gendered = [a for a, _ in swaps[i]]
        # names, places, titles and dates are facts, not the label: kept like the spurious words (not in a
        # hypothesis, whose entities an NLI edit may well have to change)
        facts = fact_words(raw[i], slot.cues) if plan.field == "text" else []
        keep = list(dict.fromkeys([*_keep_words(raw[i], plan, {}), *gendered, *facts]))
        # a principal word that is a fact ("Amazing" of the title "Amazing Grace") is copied, not changed: named, the
        # bundled model's last try wrote "Terrible Grace"
        fact_keys = {normalize(w) for w in facts}
        named = [w for w in surface_words(raw[i], _content(plan.principal)) if normalize(w) not in fact_keys]
        # a principal word that already speaks for the target ("outstanding" in a review to make Positive) is not
        # one to change: naming it got synonyms ("amazing") and wrong-way edits ("joy" -> "sorrow")
        principal = ([w for w in named if slot.target_z.get(normalize(w), 0.0) < CUE_Z] if plan.field == "text"
                     else named)
        # the label's strongest words stand in only where no principal word was (their z lists "take", "D" of
        # "D&D", "horror" too: named in place of a dropped "joy", they got "joy" -> "sorrow" and "Dungeons & Dragons")
        change = principal or (_cue_words(raw[i], slot.cues, keep) if not named or i in polar else [])
        # the words that make the sentence read as its label, instead of the vote's (a single word the data tie
        # to the target already speaks for it, as with principal words)
        opinion = opinions.get(i)
        if opinion:
            opinion = [o for o in opinion if not _all_fixed(o, [*gendered, *facts])
                       and (len(o.split()) > 1 or slot.target_z.get(normalize(o), 0.0) < CUE_Z)]
        released: list[str] = []
        if opinion:
            # a principal word outside the marked phrases still goes in when it reads alone as the label ("bad" left
            # out of "annoyed"), not when it reads as none ("movie", "could", "2001": named, the LLM swapped synonyms)
            rest = [w for w in principal if not any(has_word(o, w) for o in opinion)]
            change = [*opinion, *(w for w, p in zip(rest, polar_fn(rest, label) if rest else [], strict=True)
                                  if p >= min_polar)]
            fixed = {w.lower() for w in [*gendered, *facts]}
            released = [w for w in keep if w.lower() not in fixed and any(has_word(o, w) for o in opinion)]
        done = named and not change and i not in polar and i not in rated
        change = list(dict.fromkeys([*ratings.get(i, []), *(named if done else change)]))
        keep = [w for w in keep if w.lower() not in {c.lower() for c in change} and w not in released]
        unmarked = opinions.get(i) == [] and i not in polar and i not in rated and min_polar > 0
        (spoken if done else plain if unmarked else edits).append(
            SentenceEdit(i, raw[i], raw[i], change, keep, opinion=opinion, released=[] if hold else released,
                         held=released if hold else []))
    if not edits:  # every chosen sentence spoke for the target already, or carried no opinion: edit them as before
        edits = spoken or plain  # rather than none
    plan.plain = [e.index for e in plain if e not in edits]
    plan.edits.extend(edits)
    plan.keep = list(dict.fromkeys(w for e in plan.edits for w in e.keep))
    return base, spans


def _all_fixed(phrase: str, fixed: Sequence[str]) -> bool:
    """Whether every word of a marked phrase is a name, title, date or gendered word to copy ("Prom Night II",
    "Clockwork Orange"): named to change, it would contradict the words to copy.

    Examples
    --------
    >>> _all_fixed("Clockwork Orange", ["Clockwork", "Orange", "15"]), _all_fixed("this crap", ["Clockwork"])
    (True, False)
    """
    keys = {w.key for w in segment(phrase) if w.is_lexical}
    return bool(keys) and keys <= {w.key for f in fixed for w in segment(f) if w.is_lexical}


#: At most this many words named to change in a sentence without a principal word, each with z >= CUE_Z.
CUES, CUE_Z = 2, 2.5


def _cue_words(sentence: str, z: dict[str, float], keep: Sequence[str] = ()) -> list[str]:
    """The words of a sentence without a principal word that most carry its label (word z-statistics).

    A sentence edited because the members read it as the original label (``edit_polar``) named no
    word to change, and the small model often sent it back unchanged ("This movie is just a waste
    of time - Run away!"). Words to keep (spurious, gendered) are never named.

    Examples
    --------
    >>> _cue_words("A dull plot, a waste of time.", {"waste": 8.7, "dull": 4.7, "plot": 5.0, "time": 1.0}, ["plot"])
    ['waste', 'dull']
    """
    kept = {k.lower() for k in keep}
    found = {w.key: w.text for w in segment(sentence) if w.is_lexical and w.key not in FUNCTION_WORDS
             and w.text.lower() not in kept and z.get(w.key, 0.0) >= CUE_Z}
    return [found[k] for k in sorted(found, key=lambda k: -z[k])[:CUES]]


def _edit_request(slot: Slot, plan: FieldPlan, edit: SentenceEdit, sentences: Sequence[str], task: str,
                  labels: Sequence[str], settings: GenerateSettings, prompt: str = "edit_sentence",
                  **extra: str) -> ChatRequest:
    before = sentences[edit.index - 1] if edit.index > 0 else ""
    if plan.field == "hypothesis":
        before = f"(premise) {slot.example.get('premise') or ''}" + (f" (hypothesis) {before}" if edit.index else "")
    after = sentences[edit.index + 1] if edit.index + 1 < len(sentences) else ""
    messages = load_prompt(prompt).render(
        task=task, labels=", ".join(labels), before=before, sentence=edit.sentence, after=after,
        label=str(slot.example["label"]), target=slot.target, change=", ".join(edit.change) or "(not named)",
        keep=", ".join(edit.keep) or "(none)", **extra)
    return ChatRequest(messages, _params(settings, slot))


def _take_edit(slot: Slot, plan: FieldPlan, edit: SentenceEdit, answer: ChatResult | Failure, guard: LeakGuard,
               labels: Sequence[str], *, final: bool, swap: Callable[[str], str]) -> str | None:
    """Read an edit answer into ``edit`` (``edit.new`` is it after ``swap``); return the problem when a repair
    request should follow."""
    if isinstance(answer, Failure):
        slot.fail("edit", answer.message, retriable=answer.retriable, hint=answer.hint)
        return None
    new, problem = _read_answer(slot, plan, edit, answer, guard, labels)
    if problem is None:
        edit.answer, edit.new = new, swap(new)
        return None
    edit.problems.append(problem.reason)
    if final:  # the sentence stays as it was; the slot fails only if no sentence could be edited
        edit.failure = f"Sentence {edit.index + 1} of the {plan.field}: {problem.message}"
        return None
    return problem.message


def _read_answer(slot: Slot, plan: FieldPlan, edit: SentenceEdit, answer: ChatResult, guard: LeakGuard,
                 labels: Sequence[str]) -> tuple[str, Check | None]:
    """Record an answer to an edit request; return the edited sentence it holds and why it cannot be used."""
    edit.raw.append(answer.text)
    new = clean_sentence(answer.text, edit.sentence)
    return new, _check_edit(slot, plan, edit, new, guard, labels)


def _check_edit(slot: Slot, plan: FieldPlan, edit: SentenceEdit, new: str, guard: LeakGuard,
                labels: Sequence[str]) -> Check | None:
    """Why an edited sentence cannot be used (:func:`~engine.counterbias.edit.check_sentence`, and a rating of the
    original label's side kept), or ``None``."""
    problem = check_sentence(new, edit.sentence, edit.keep, guard=guard, original_text=plan.original,
                             labels=labels, others=plan.others, lean=slot.lean, target=slot.target,
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


def _held_plan(edit: SentenceEdit) -> tuple[list[str], list[str], list[str]]:
    """The words to change, the opinion words to keep and turn around, and the words to copy of an edit's try with
    its held words kept: a marked phrase made only of held words ("heartfelt", "superbly-crafted") is kept and
    turned around, not changed; a longer one ("great acting") is still changed, its held words copied."""
    held = {w.key for h in edit.held for w in segment(h) if w.is_lexical}
    whole = [c for c in edit.change if (keys := {w.key for w in segment(c) if w.is_lexical}) and keys <= held]
    return ([c for c in edit.change if c not in whole], whole, list(dict.fromkeys([*edit.keep, *edit.held])))


def _hold_tries(client: CachedClient, jobs: Sequence[tuple[Slot, FieldPlan, SentenceEdit, ChatRequest]],
                dataset: DatasetInfo, settings: GenerateSettings, mapping: dict[str, str], token: CancelToken,
                guard: LeakGuard, polar_fn: Any) -> set[int]:
    """The first try of each sentence whose marked opinion words hold spurious words (``held``,
    ``GenerateSettings.edit_hold``): those words are copied and the opinion turned around them (prompt
    ``edit_sentence_hold``, or ``edit_sentence`` when every held word sits in a longer phrase that is still changed).

    A spurious word that the vote did not find principal but that carries the sentence's opinion ("heartfelt",
    "masterpiece", "shines") is exactly what a counterbias example must keep while the label flips; released at once,
    the bundled model replaced 8 of 147 such words on 50 CAD dev reviews (stop 47), and the human editors more. The
    try is the sentence's edit when it passes every check of an edit (its held words included) and the sentence
    reader reads it as the target (above 0.5: not merely as no label); otherwise it is repaired once in the same
    conversation (``edit_sentence_repair``, saying what was wrong), and the repair is judged the same way. When
    neither is, the held words are released (``released``) and the sentence is edited as without the hold — the
    same requests. Returns the ids of the edits the tries made.
    """
    todo = [(slot, plan, edit) for slot, plan, edit, _ in jobs if edit.held and slot.error is None]
    if not todo or polar_fn is None:
        for _, _, edit in todo:
            edit.released, edit.hold = list(edit.held), "no reader"
        return set()
    task = settings.task_description(dataset.labels)
    asked = []
    for slot, plan, edit in todo:
        change, turn, keep = _held_plan(edit)
        held = SentenceEdit(edit.index, edit.original, edit.sentence, change, keep)
        asked.append(_edit_request(slot, plan, held, plan.others, task, dataset.labels, settings,
                                   prompt="edit_sentence_hold" if turn else "edit_sentence",
                                   hold=", ".join(turn)).messages)
    taken: set[int] = set()
    left = _judge_holds(client, list(zip(todo, asked, strict=True)), dataset, settings, mapping, token, guard,
                        polar_fn, taken)
    if left:
        repair = load_prompt("edit_sentence_repair")
        again = [((slot, plan, edit), [*messages, {"role": "assistant", "content": answer},
                                       *repair.render(problem=problem, target=slot.target,
                                                      keep=", ".join(_held_plan(edit)[2]))])
                 for (slot, plan, edit), messages, answer, problem in left]
        left = _judge_holds(client, again, dataset, settings, mapping, token, guard, polar_fn, taken)
    for (slot, _, edit), _, _, _ in left:
        slot.repaired("release")
        edit.released = list(edit.held)
    return taken


def _judge_holds(client: CachedClient, items: Sequence[tuple[tuple[Slot, FieldPlan, SentenceEdit], list[Message]]],
                 dataset: DatasetInfo, settings: GenerateSettings, mapping: dict[str, str], token: CancelToken,
                 guard: LeakGuard, polar_fn: Any,
                 taken: set[int]) -> list[tuple[tuple[Slot, FieldPlan, SentenceEdit], list[Message], str, str]]:
    """Send the held tries ``items`` (``((slot, plan, edit), messages)``) and take each answer that passes every
    check (the held words among the words to keep) and reads as the target into its edit (its id into ``taken``).
    Returns the others, with their messages, answer and what to tell the LLM; ``edit.hold`` says how each ended."""
    answers = client.chat_many([ChatRequest(m, _params(settings, s)) for (s, _, _), m in items], cancel=token).results
    left, tried = [], []
    for ((slot, plan, edit), messages), answer in zip(items, answers, strict=True):
        if isinstance(answer, Failure):
            slot.fail("edit", answer.message, retriable=answer.retriable, hint=answer.hint)
            continue
        released_keep, edit.keep = edit.keep, _held_plan(edit)[2]
        new, problem = _read_answer(slot, plan, edit, answer, guard, dataset.labels)
        edit.keep = released_keep
        if problem is not None:
            edit.hold = problem.reason
            left.append(((slot, plan, edit), messages, answer.text, problem.message))
        else:
            tried.append(((slot, plan, edit), messages, answer.text, new))
    for target in {slot.target for (slot, _, _), *_ in tried}:
        mine = [t for t in tried if t[0][0].target == target]
        for ((slot, plan, edit), messages, text, new), p in zip(mine, polar_fn([t[3] for t in mine], target),
                                                                  strict=True):
            if not p > 0.5:  # NaN: no verdict, not taken
                edit.hold = "not read as the target"
                words, it = ", ".join(f'"{w}"' for w in edit.held), "them" if len(edit.held) > 1 else "it"
                left.append(((slot, plan, edit), messages, text,
                             f"It does not read as {target}. Keep {words} and turn the opinion around {it}: negate "
                             f"{it}, or say the opposite about {it}, so that the sentence reads as {target}."))
                continue
            edit.change, _, edit.keep = _held_plan(edit)
            edit.answer, edit.new, edit.hold = new, _swapper(plan, mapping)(new), "kept"
            edit.messages = list(messages)
            plan.keep = list(dict.fromkeys([*plan.keep, *edit.held]))
            taken.add(id(edit))
    return left


#: Seed offset of the fresh try of a sentence (``edit_fresh``).
FRESH_SEED = 500


def _fresh_tries(client: CachedClient, jobs: Sequence[tuple[Slot, FieldPlan, SentenceEdit, ChatRequest]],
                 dataset: DatasetInfo, settings: GenerateSettings, mapping: dict[str, str], token: CancelToken,
                 guard: LeakGuard, polar_fn: Any, still: Mapping[int, float]) -> dict[int, float]:
    """One more try for sentences still unedited after their repair, and for edits the sentence reader still reads
    as unmoved after theirs (``still``: ``{id(edit): its P(target)}``), in a fresh conversation with a new seed (a
    small model that repeated the sentence twice in one conversation mostly repeats it there a third time, and a
    repair mostly keeps the synonym it was told about).

    A sentence of a text whose edits did not move it — unmoved, or sent back unchanged — gets the stronger prompt
    ``edit_sentence_strong`` (the opposite opinion, as many words as that needs) instead of the first request
    again: of 73 sentences of 50 CAD reviews still read as the original label after both, one try each, the bundled
    1.5B model turned 10 with it (a usable edit read as the target) and 5 with the first request asked again. Other
    failures (a word to keep dropped, the wrong sentence edited) get the first request again: a freer rewrite would
    drop more.

    The answer passes the same checks. For an unedited sentence it may not read less as the target than the
    sentence did (members' reading); for an unmoved edit it replaces the edit only if it reads more as the target.
    Otherwise the sentence keeps what it had. Returns ``still`` after the tries: the kept edits that still read
    below 0.5 as the target, with that reading.
    """
    left = dict(still)
    jobs = [j for j in jobs if j[0].error is None
            and ((j[2].new is None and j[2].failure) or (j[2].new is not None and id(j[2]) in still))]
    if not jobs:
        return left
    requests = []
    task = settings.task_description(dataset.labels)
    for slot, plan, edit, request in jobs:
        slot.repaired("fresh")
        params = dict(request.params)
        params["seed"] = int(params.get("seed", settings.seed)) + FRESH_SEED
        params["temperature"] = max(float(params.get("temperature", settings.temperature)), RETRY_TEMPERATURE)
        messages = request.messages
        if _stubborn(plan, edit, still):
            slot.repaired("strong")
            messages = _edit_request(slot, plan, edit, plan.others, task, dataset.labels, settings,
                                     prompt="edit_sentence_strong").messages
        requests.append(ChatRequest(messages, params))
    answers = client.chat_many(requests, cancel=token).results
    usable: list[tuple[Slot, FieldPlan, SentenceEdit, str]] = []
    for (slot, plan, edit, _), answer in zip(jobs, answers, strict=True):
        if isinstance(answer, Failure):
            slot.fail("edit", answer.message, retriable=answer.retriable, hint=answer.hint)
            continue
        new, problem = _read_answer(slot, plan, edit, answer, guard, dataset.labels)
        if problem is not None:
            edit.problems.append(problem.reason)
        elif new != edit.answer:
            usable.append((slot, plan, edit, new))
    unedited = [u for u in usable if u[2].new is None]
    backward = _backward(unedited, polar_fn) if settings.edit_moved > 0 else set()
    for slot, plan, edit, new in unedited:
        if id(edit) in backward:
            edit.problems.append("wrong direction")
            continue
        edit.answer, edit.new, edit.failure = new, _swapper(plan, mapping)(new), None
    moved = [u for u in usable if u[2].new is not None and id(u[2]) in still]
    for target in {slot.target for slot, _, _, _ in moved}:
        items = [(plan, edit, new) for slot, plan, edit, new in moved if slot.target == target]
        probs = polar_fn([new for _, _, new in items], target) if polar_fn is not None else [float("nan")] * len(items)
        for (plan, edit, new), p in zip(items, probs, strict=True):
            if p > still[id(edit)]:  # NaN: no verdict, the edit stays
                edit.answer, edit.new = new, _swapper(plan, mapping)(new)
                _reread(left, edit, p)
            else:
                edit.problems.append("fresh try kept out")
    return left


def _reread(still: dict[int, float], edit: SentenceEdit, p: float) -> None:
    """Record the reading of an edit's new answer: off ``still`` once it reads as the target at least as much as
    not (P ≥ 0.5), else still unmoved with that reading."""
    if p >= 0.5:
        still.pop(id(edit), None)
    else:
        still[id(edit)] = float(p)


def _stubborn(plan: FieldPlan, edit: SentenceEdit, still: Mapping[int, float]) -> bool:
    """A sentence of a text field whose edits did not move it: read as unmoved after its repair, or every answer
    sent back unchanged (the first request again mostly gets the same answer)."""
    if plan.field != "text":
        return False
    return id(edit) in still or (edit.new is None and bool(edit.problems)
                                 and all(p == "unchanged" for p in edit.problems))


def _phrase_swaps(swapper: PhraseSwapper, jobs: Sequence[tuple[Slot, FieldPlan, SentenceEdit, ChatRequest]],
                  labels: Sequence[str], polar_fn: Any, mapping: dict[str, str], guard: LeakGuard,
                  still: Mapping[int, float]) -> dict[int, float]:
    """The last try for a sentence of a text whose opinion words were marked and that still has no usable edit, or
    whose kept edit still reads below 0.5 as the target (``still``): each marked phrase is replaced, in the sentence
    as written, by the words the LLM gives for its opposite (:mod:`engine.counterbias.phrase_swap`); every other
    byte stays.

    The swapped sentence passes the same checks as any edit and replaces what the sentence had only when the
    sentence reader reads it more as the target (than the kept edit, or than the sentence). The replacements are
    recorded in the edit's ``swapped``. A request lost in transport fails the slot retriably, like any edit request.
    Returns ``still`` after the swaps.
    """
    left = dict(still)
    todo = [(slot, plan, edit) for slot, plan, edit, _ in jobs
            if slot.error is None and plan.field == "text" and edit.opinion
            and ((edit.new is None and edit.failure) or (edit.new is not None and id(edit) in still))]
    if not todo:
        return left
    asks = {id(edit): [(edit.sentence, phrase, str(slot.example["label"]), slot.target) for phrase in edit.opinion]
            for slot, _, edit in todo}
    found = dict(zip((a for mine in asks.values() for a in mine),
                     swapper.swap([a for mine in asks.values() for a in mine]), strict=True))
    tried: list[tuple[Slot, FieldPlan, SentenceEdit, str, dict[str, str]]] = []
    for slot, plan, edit in todo:
        lost = next((swapper.failed[a] for a in asks[id(edit)] if a in swapper.failed), None)
        if lost is not None:
            slot.fail("edit", lost.message, retriable=lost.retriable, hint=lost.hint)
            continue
        replacements = {a[1]: found[a] for a in asks[id(edit)] if found[a]}
        if not replacements:
            edit.problems.append("no swap")
            continue
        new = swap_phrases(edit.sentence, replacements)
        problem = _check_edit(slot, plan, edit, new, guard, labels)
        if problem is not None:
            edit.problems.append(f"swap: {problem.reason}")
            continue
        tried.append((slot, plan, edit, new, replacements))
    for target in {slot.target for slot, _, _, _, _ in tried}:
        items = [t for t in tried if t[0].target == target]
        fresh = [t for t in items if id(t[2]) not in still]  # no usable edit: compared with the sentence itself
        probs = polar_fn([t[3] for t in items] + [t[2].sentence for t in fresh], target)
        before = dict(zip((id(t[2]) for t in fresh), probs[len(items):], strict=True))
        for (slot, plan, edit, new, replacements), p in zip(items, probs[: len(items)], strict=True):
            if p > still.get(id(edit), before.get(id(edit), float("nan"))):  # NaN: no verdict, nothing changes
                slot.repaired("swap")
                edit.answer, edit.new, edit.failure = new, _swapper(plan, mapping)(new), None
                edit.swapped = replacements
                _reread(left, edit, p)
            else:
                edit.problems.append("swap kept out")
    return left


def _drop_unmoved(jobs: Sequence[tuple[Slot, FieldPlan, SentenceEdit, ChatRequest]],
                  still: Mapping[int, float]) -> None:
    """Edits that still read as unmoved after every try (``still``) are dropped: the sentence stays as written.

    Such an edit is a synonym where the opposite was asked ("a waste of money" → "a waste of time"): it leaves the
    sentence speaking for the original label, so it only makes the candidate less minimal, and it may take a
    released word with it ("a horror masterpiece" → "a comedy or an action movie").
    """
    for slot, plan, edit, _ in jobs:
        if id(edit) in still and edit.new is not None and slot.error is None:
            edit.answer = edit.new = None
            edit.problems.append("unmoved, dropped")
            edit.failure = (f"Sentence {edit.index + 1} of the {plan.field}: every edit still read as "
                            f"{slot.example['label']} (sentence reader), so the sentence stays as it was.")


#: At most this share of a text's sentences is removed (``GenerateSettings.edit_remove``); a text with more stubborn
#: sentences keeps them all, and the residual check judges it.
REMOVE_SHARE = 1 / 3


def _remove_stubborn(slots: Sequence[Slot], layout: Mapping[int, Any]) -> None:
    """Remove the sentences the reader read as the original label that still have no usable edit after every try
    (``GenerateSettings.edit_remove``): the LLM sent "Very recommendable." back unchanged, or "This picture is a real
    can't-miss!" — left in, such a sentence keeps a review half flipped. A sentence goes only when it holds no word
    to keep (its spurious, gendered and fact words), another sentence of the text has an edit, and at most
    :data:`REMOVE_SHARE` of the text's sentences go."""
    for slot in slots:
        if slot.error is not None:
            continue
        for plan in slot.fields:
            if plan.field != "text" or id(plan) not in layout:
                continue
            polar = set(plan.polar)
            spurious = [w for w in plan.spurious if w.strip()]
            stuck = [e for e in plan.edits if e.index in polar and e.new is None and not e.keep
                     and not any(has_word(e.sentence, w) for w in spurious if w not in e.released)]
            total = len(layout[id(plan)][1])
            if not stuck or not any(e.new for e in plan.edits) or len(stuck) > total * REMOVE_SHARE:
                continue
            for edit in stuck:
                edit.new, edit.removed, edit.failure = "", True, None
                edit.problems.append("removed")
            slot.repaired("remove", len(stuck))


def _fail_unedited(slot: Slot) -> None:
    """Fail a slot none of whose sentences could be edited, with the first sentence's reason."""
    if slot.error is not None:
        return
    edits = [e for p in slot.fields for e in p.edits]
    if not edits or any(e.new is not None for e in edits):
        return
    first = next((e for e in edits if e.failure), None)
    if first is None:
        return
    slot.fail("edit", first.failure, retriable=True, quality=True, reason=first.problems[-1] if first.problems else "",
              hint="Generate again (a retry samples anew), or use a stronger model.")


def _edit_chunk(client: CachedClient, slots: list[Slot], dataset: DatasetInfo, settings: GenerateSettings,
                mapping: dict[str, str], token: CancelToken, guard: LeakGuard,
                label_fn: Any = None, polar_fn: Any = None, finder: OpinionFinder | None = None,
                swapper: PhraseSwapper | None = None) -> None:
    """Edit mode: rewrite the sentences holding principal words, one request each (see the module doc)."""
    task = settings.task_description(dataset.labels)
    layout: dict[int, tuple[str, list[tuple[int, int]], list[str]]] = {}
    jobs: list[tuple[Slot, FieldPlan, SentenceEdit, ChatRequest]] = []
    if settings.edit_polar > 0 and hasattr(polar_fn, "read"):  # every reading of the chunk in one batch (a server
        # answers them concurrently), not one batch per text as each is planned
        read = {id(slot): [s for plan in slot.fields if plan.field == "text"
                           for s in _sentences_as_written(plan.original)[2]] for slot in slots if slot.error is None}
        polar_fn.read([s for mine in read.values() for s in mine])
        _fail_unplanned(slots, polar_fn, read, "read")
    if finder is not None:  # the opinion words of every sentence to mark (see _to_mark), in one batch too
        items: dict[int, list[tuple[str, str]]] = {}
        for slot in slots:
            for plan in slot.fields if slot.error is None else ():
                raw = _sentences_as_written(plan.original)[2] if plan.field == "text" else []
                label = str(slot.example["label"])
                items.setdefault(id(slot), []).extend(
                    (raw[i], label) for i in _to_mark(plan, raw, _polar_sentences(polar_fn, raw, label,
                                                                                   settings.edit_polar),
                                                      settings.edit_polar > 0))
        finder.find([i for mine in items.values() for i in mine])
        _fail_unplanned(slots, finder, {k: [s for s, _ in mine] for k, mine in items.items()},
                        "marked for its opinion words")
    for slot in slots:
        if slot.error is not None:
            continue
        for plan in slot.fields:
            found = _plan_edits(slot, plan, mapping, polar_fn, settings.edit_polar, finder, settings.edit_hold)
            if found is None:
                break
            base, spans = found
            layout[id(plan)] = (base, spans)
            jobs.extend((slot, plan, e, _edit_request(slot, plan, e, plan.others, task, dataset.labels, settings))
                        for e in plan.edits)
    jobs = [j for j in jobs if j[0].error is None]

    # 0. a sentence whose opinion words hold spurious words is first edited with them kept
    taken = _hold_tries(client, jobs, dataset, settings, mapping, token, guard, polar_fn)
    rest = [j for j in jobs if id(j[2]) not in taken and j[0].error is None]

    # 1. one request per sentence, one repair naming what was wrong
    answers = client.chat_many([j[3] for j in rest], cancel=token).results
    retry = []
    for (slot, plan, edit, request), answer in zip(rest, answers, strict=True):
        edit.messages = list(request.messages)
        problem = _take_edit(slot, plan, edit, answer, guard, dataset.labels, final=False,
                             swap=_swapper(plan, mapping))
        if problem:
            retry.append((slot, plan, edit, request, answer, problem))
    # a usable edit that still reads as the original label (a synonym where the opposite was asked) is
    # repaired too; its first edit stays unless the repair reads more as the target
    still: dict[int, float] = {}
    unmoved = _unmoved([(slot, plan, edit) for slot, plan, edit, _ in rest if edit.answer is not None],
                       polar_fn, settings.edit_moved)
    retry += [(slot, plan, edit, request, answer, unmoved[id(edit)][0])
              for (slot, plan, edit, request), answer in zip(rest, answers, strict=True) if id(edit) in unmoved]
    if retry:
        repair = load_prompt("edit_sentence_repair")
        requests = []
        for slot, _, edit, request, answer, problem in retry:
            slot.repaired("edit")
            edit.messages = [*request.messages, {"role": "assistant", "content": answer.text},
                             *repair.render(problem=problem, target=slot.target,
                                            keep=", ".join(edit.keep) or "(none)")]
            requests.append(ChatRequest(edit.messages, request.params))
        second = client.chat_many(requests, cancel=token).results
        firsts = {}
        for (slot, plan, edit, _, _, _), answer in zip(retry, second, strict=True):
            first = (edit.answer, edit.new) if id(edit) in unmoved else None
            _take_edit(slot, plan, edit, answer, guard, dataset.labels, final=first is None,
                       swap=_swapper(plan, mapping))
            if first is not None:
                firsts[id(edit)] = (slot, edit, first, unmoved[id(edit)][1])
        if firsts:
            still = _settle(firsts, polar_fn, settings.edit_moved)
    if settings.edit_fresh:
        still = _fresh_tries(client, jobs, dataset, settings, mapping, token, guard, polar_fn, still)
    if swapper is not None and polar_fn is not None:
        still = _phrase_swaps(swapper, jobs, dataset.labels, polar_fn, mapping, guard, still)
    _drop_unmoved(jobs, still)
    if settings.edit_remove:
        _remove_stubborn(slots, layout)
    for slot in {id(j[0]): j[0] for j in jobs}.values():
        _fail_unedited(slot)

    # 2. the candidate: the original with the edited sentences replaced
    def build(slot: Slot) -> None:
        for plan in slot.fields:
            base, spans = layout[id(plan)]
            plan.text = assemble(base, spans, {e.index: e.new for e in plan.edits if e.new is not None},
                                 other=_swapper(plan, mapping))

    live = [s for s in slots if s.error is None and all(id(p) in layout for p in s.fields)]
    for slot in live:
        build(slot)
    if settings.repair_flip and live:
        _repair_flips(client, live, dataset, settings, token, guard, label_fn, mapping, polar_fn)
        for slot in live:
            build(slot)
    if getattr(polar_fn, "checks_residual", False):
        _residual(live, polar_fn)
    if hasattr(polar_fn, "failure_for"):
        _fail_unread(slots, polar_fn)


def _fail_unplanned(slots: Sequence[Slot], asker: Any, sentences: Mapping[int, Sequence[str]], what: str) -> None:
    """Fail (retriably, step "read") a slot one of whose ``sentences`` (``{id(slot): [...]}``) could not be read or
    marked before its edits were planned: planned without that answer, its edit requests would differ from the next
    run's, and be sent for nothing."""
    for slot in slots:
        failure = asker.failure_for(sentences.get(id(slot), [])) if slot.error is None else None
        if failure is not None:
            slot.fail("read", f"A sentence could not be {what}: {failure.message}", retriable=failure.retriable,
                      hint=failure.hint)


def _fail_unread(slots: Sequence[Slot], reader: Any) -> None:
    """Fail (retriably) a slot whose sentences, edits or finished text could not be read: its edits were chosen and
    judged without that reading; the next run sends only what failed (the rest comes from the cache)."""
    for slot in slots:
        texts = [s for plan in slot.fields for s in (*plan.others, *(e.answer or "" for e in plan.edits),
                                                     *split_sentences(plan.text or ""))]
        failure = reader.failure_for(texts) if slot.error is None else None
        if failure is not None:
            slot.fail("read", f"A sentence could not be read: {failure.message}", retriable=failure.retriable,
                      hint=failure.hint)


def _residual(slots: Sequence[Slot], reader: Any) -> None:
    """Record the sentences of each finished text that the reader still reads as the original label (most
    answers come from the cache: untouched sentences were read when the edits were planned)."""
    plans = [(slot, plan) for slot in slots for plan in slot.fields if plan.field == "text" and plan.text]
    found = residual_sentences(reader, [(plan.text or "", str(slot.example["label"])) for slot, plan in plans])
    for (_, plan), left in zip(plans, found, strict=True):
        plan.residual = left


#: How far the members' P(target) of an edited sentence may fall below the original sentence's before the edit
#: counts as moved the wrong way (edit mode with ``edit_moved``).
WRONG_WAY = 0.1


def _swapper(plan: FieldPlan, mapping: dict[str, str]) -> Callable[[str], str]:
    """The gender swap of one field's sentences (none when the text names a person: :func:`names_person`)."""
    if not mapping or not plan.gender:
        return lambda text: text
    return lambda text: swap_gender(text, mapping)[0]


def _unmoved(done: Sequence[tuple[Slot, FieldPlan, SentenceEdit]], polar_fn: Any,
             min_gain: float) -> dict[int, tuple[str, float]]:
    """Usable edits the ensemble, reading the sentence alone, does not see move to the target.

    Unmoved: mean P(target) of the edited sentence below 0.5 and risen by less than ``min_gain``
    over the original sentence's, or fallen by more than :data:`WRONG_WAY` (moved the wrong way:
    "how much joy you take away" → "how much sorrow", with Positive the target). Returns ``{id(edit): (what
    to tell the LLM, the original sentence's P(target))}``.
    """
    if polar_fn is None or min_gain <= 0:
        return {}
    out: dict[int, tuple[str, float]] = {}
    by_target: dict[str, list[tuple[Slot, SentenceEdit]]] = {}
    for slot, plan, edit in done:
        if plan.field == "text" and not _rating_only_turned(slot, edit):
            by_target.setdefault(slot.target, []).append((slot, edit))
    for target, items in by_target.items():
        probs = polar_fn([e.original for _, e in items] + [e.answer for _, e in items], target)
        if probs is None:
            return {}
        before, after = probs[: len(items)], probs[len(items):]
        for (slot, edit), p0, p1 in zip(items, before, after, strict=True):
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
            out[id(edit)] = (f"{message} Use words of the opposite meaning, or add or remove a negation, so that "
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


def _settle(firsts: dict[int, tuple[Slot, SentenceEdit, tuple[str | None, str | None], float]], polar_fn: Any,
            min_gain: float) -> dict[int, float]:
    """After repairing unmoved edits: keep whichever of the first edit and the repair reads more as the target;
    drop the edit (the sentence stays as it was) when even that one reads less as the target than the sentence.

    Returns ``{id(edit): its P(target)}`` of the kept edits that are still unmoved (P(target) below 0.5 and risen
    by less than ``min_gain``): candidates for a fresh try.
    """
    still: dict[int, float] = {}
    for target in {slot.target for slot, _, _, _ in firsts.values()}:
        items = [(edit, first, p0) for slot, edit, first, p0 in firsts.values() if slot.target == target]
        repaired = [(edit, first, p0) for edit, first, p0 in items if edit.answer != first[0]]
        probs = polar_fn([first[0] for _, first, _ in items] + [edit.answer for edit, _, _ in repaired], target)
        p_first = dict(zip((id(e) for e, _, _ in items), probs[: len(items)], strict=True))
        p_repair = dict(zip((id(e) for e, _, _ in repaired), probs[len(items):], strict=True))
        for edit, first, p0 in items:
            best = p_repair.get(id(edit), float("-inf"))
            if not best > p_first[id(edit)]:
                if id(edit) in p_repair:
                    edit.problems.append("repair kept out")
                edit.answer, edit.new = first
                best = p_first[id(edit)]
            if best < p0 - WRONG_WAY:
                edit.answer = edit.new = None
                edit.problems.append("wrong direction")
                edit.failure = (f"Sentence {edit.index + 1}: every edit read less as {target} than the sentence "
                                f"(sentence reader, P {best:.2f} < {p0:.2f}).")
            elif best < 0.5 and best - p0 < min_gain:
                still[id(edit)] = float(best)
    return still


def _strongest(plan: FieldPlan) -> list[str]:
    """The principal words with the most votes (at most :data:`STRONGEST`), in vote order."""
    if not plan.principal:
        return []
    content = _content(plan.principal)
    top = max((plan.votes.get(w, 0) for w in content), default=0)
    return [w for w in content if plan.votes.get(w, 0) == top][:STRONGEST]


def _repair_flips(client: CachedClient, slots: list[Slot], dataset: DatasetInfo, settings: GenerateSettings,
                  token: CancelToken, guard: LeakGuard, label_fn: Any, mapping: dict[str, str],
                  polar_fn: Any = None) -> None:
    """One repair for half-flipped candidates: strongest principal words left, or judged as the original label.

    A repaired sentence replaces the edit only if it passes the sentence checks and, with the members' reading
    (``polar_fn``, ``settings.edit_moved`` > 0), does not read less as the target than the edit it replaces.
    """
    judged = label_fn([{**{k: s.example.get(k) for k in ("text", "premise", "hypothesis")},
                        **{p.field: p.text for p in s.fields}} for s in slots]) if label_fn else [None] * len(slots)
    repair = load_prompt("edit_flip_repair")
    jobs = []
    for slot, label in zip(slots, judged, strict=True):
        original_label = str(slot.example["label"])
        for plan in slot.fields:
            strongest = {w.lower() for w in surface_words(plan.original, _strongest(plan))}
            left = {e.index: [w for w in e.change if w.lower() in strongest and e.new and has_word(e.new, w)]
                    for e in plan.edits}
            words = sorted({w for ws in left.values() for w in ws})
            as_original = label is not None and label == original_label
            if not words and not as_original:
                continue
            why = []
            if words:
                why.append("The words " + ", ".join(f'"{w}"' for w in words) + " are still there.")
            if as_original:
                why.append(f"A classifier still reads it as {original_label}.")
            plan.flip = {"words": words, "judged": label, "repaired": [], "rejected": []}
            targets = [e for e in plan.edits if left[e.index]] or [e for e in plan.edits if e.new]
            for edit in targets:
                named = left[edit.index] or [w for w in edit.change if w.lower() not in FUNCTION_WORDS]
                edit.messages = [*edit.messages, {"role": "assistant", "content": edit.raw[-1] if edit.raw else ""},
                                 *repair.render(label=original_label, why=" ".join(why), words=", ".join(f'"{w}"' for w in named)
                                                or "the words that carry the opinion", target=slot.target,
                                                keep=", ".join(edit.keep) or "(none)")]
                jobs.append((slot, plan, edit, ChatRequest(edit.messages, _params(settings, slot))))
    if not jobs:
        return
    answers = client.chat_many([j[3] for j in jobs], cancel=token).results
    usable: list[tuple[Slot, FieldPlan, SentenceEdit, str]] = []
    for (slot, plan, edit, _), answer in zip(jobs, answers, strict=True):
        slot.repairs["flip"] = 1
        if isinstance(answer, Failure):  # like any other request: the slot fails, the next run retries it
            slot.fail("flip repair", answer.message, retriable=answer.retriable, hint=answer.hint)
            continue
        new, problem = _read_answer(slot, plan, edit, answer, guard, dataset.labels)
        if problem is None and new != edit.answer:
            usable.append((slot, plan, edit, new))
        else:
            plan.flip["rejected"].append({"sentence": edit.index,
                                          "reason": problem.reason if problem else "unchanged"})
    backward = _backward(usable, polar_fn) if settings.edit_moved > 0 else set()
    for slot, plan, edit, new in usable:
        if id(edit) in backward:
            plan.flip["rejected"].append({"sentence": edit.index, "reason": "wrong direction"})
            continue
        edit.answer, edit.new = new, _swapper(plan, mapping)(new)
        plan.flip["repaired"].append(edit.index)


def _backward(usable: Sequence[tuple[Slot, FieldPlan, SentenceEdit, str]], polar_fn: Any) -> set[int]:
    """Answers (flip repairs, fresh tries) the members read as less the target than what they would replace — the
    kept edit, else the sentence — by more than :data:`WRONG_WAY`: asked to remove "great" from "I love movies
    where …, so this could have been great", the small model wrote "I hate movies where …" into a text meant to
    read as Positive."""
    if polar_fn is None:
        return set()
    out: set[int] = set()
    for target in {slot.target for slot, plan, _, _ in usable if plan.field == "text"}:
        items = [(edit, new) for slot, plan, edit, new in usable if plan.field == "text" and slot.target == target]
        probs = polar_fn([edit.answer or edit.sentence for edit, _ in items] + [new for _, new in items], target)
        for (edit, _), before, after in zip(items, probs[: len(items)], probs[len(items):], strict=True):
            if after < before - WRONG_WAY:  # NaN (a member without the label): no verdict
                out.add(id(edit))
    return out


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


# ---------------------------------------------------------------------------- storing


def _store_slots(conn: sqlite3.Connection, run_id: int, slots: Sequence[Slot], key: str, llm: LLMConfig,
                 vote_set_id: int) -> tuple[list[int], list[int]]:
    created, failed = [], []
    stamp = now()
    for slot in slots:
        example_id = int(slot.example["id"])
        # a retried slot replaces its failed row
        conn.execute(
            "DELETE FROM candidates WHERE example_id = ? AND target_label = ? AND method = ? AND status = 'failed' "
            "AND json_extract(meta, '$.settings_key') = ? AND json_extract(meta, '$.sample') = ?",
            (example_id, slot.target, METHOD, key, slot.sample),
        )
        texts = {name: slot.example.get(name) for name in ("text", "premise", "hypothesis")}
        for plan in slot.fields:
            texts[plan.field] = plan.text
        meta = {
            "settings_key": key, "sample": slot.sample, "run_id": run_id, "vote_set_id": vote_set_id,
            "backend": llm.backend, "model": llm.model, "keep_words": slot.keep_words,
            "fields": [p.to_dict() for p in slot.fields], "original_label": slot.example["label"],
            "generated": {p.field: p.text for p in slot.fields}, "error": slot.error, "attempt": slot.attempt,
            "mode": slot.mode, "repairs": slot.repairs,
            "edit_distance": {p.field: round(word_edit_distance(p.original, p.text), 4)
                              for p in slot.fields if p.text is not None and not slot.error},
        }
        status = "failed" if slot.error else "proposed"
        cursor = conn.execute(
            "INSERT INTO candidates (run_id, example_id, method, target_label, text, premise, hypothesis, scores, "
            "meta, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?)",
            (run_id, example_id, METHOD, slot.target, texts["text"], texts["premise"], texts["hypothesis"],
             json.dumps(meta, ensure_ascii=False), status, stamp),
        )
        (failed if slot.error else created).append(int(cursor.lastrowid))
        if slot.fields:
            _mark_triples(conn, example_id, slot.fields)
    return created, failed


def _mark_triples(conn: sqlite3.Connection, example_id: int, plans: Sequence[FieldPlan]) -> None:
    """Record each stored triple's category (shown in the GUI's triples view)."""
    for plan in plans:
        if not plan.categories:
            continue
        rows = [r["id"] for r in current_rows(conn, example_id) if r["field"] == plan.field]  # load_triples' order
        if len(rows) == len(plan.categories):
            conn.executemany("UPDATE triples SET category = ? WHERE id = ?",
                             [(c, r) for c, r in zip(plan.categories, rows, strict=True)])
