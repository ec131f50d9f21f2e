"""The generate job: lock, run record, plan and resume, the chunk loop with its rate and time left, judging, storing.

The method itself is in :mod:`engine.generation.edit` (edit mode) and :mod:`engine.generation.reconstruct`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.attribution.explainers import default_judges, judges_in_training
from engine.attribution.word_prior import label_rating_sides, label_vocabulary, label_word_z
from engine.counterbias.edit import label_lean
from engine.counterbias.leak import LEAK_SOURCES, LeakGuard
from engine.counterbias.opinion_words import OpinionFinder
from engine.counterbias.phrase_swap import PhraseSwapper
from engine.counterbias.sentence_reading import create_reader
from engine.counterbias.settings import GenerateSettings
from engine.counterbias.triples import extract_triples
from engine.generation.demos import DemoPool
from engine.generation.edit.pipeline import edit_prompts, run_edit_chunk
from engine.generation.edit.state import EditRun
from engine.generation.plan import plan_slots
from engine.generation.reconstruct import PROMPTS as RECONSTRUCT_PROMPTS
from engine.generation.reconstruct import run_reconstruct_chunk
from engine.generation.sources import gender_mapping, vote_source, votes_for
from engine.generation.store import store_slots
from engine.llm.base import ChatBackend, Usage
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store.locks import run_lock
from engine.store.runs import recorded_run

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["GenerateResult", "generate_counterbias", "rate_text", "run_prompts"]


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
    #: Sentence edits in the demonstration pool when the run started (0: the prompts' invented examples only).
    demonstrations: int = 0
    #: Edit mode: the LLM requests of each stage (cached answers included), in stage order.
    requests_by_stage: dict[str, int] = field(default_factory=dict)

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
            **({"demonstrations": self.demonstrations} if self.demonstrations else {}),
            **({"requests_by_stage": dict(self.requests_by_stage)} if self.requests_by_stage else {}),
        }


def rate_text(done: int, started: float, total: int) -> str:
    """`` · 3.2 candidates/min, 12 min left`` from the pace so far (empty before the first batch)."""
    elapsed = time.perf_counter() - started
    if done <= 0 or elapsed <= 0:
        return ""
    per_min = done / elapsed * 60
    left_min = (total - done) / per_min if per_min > 0 else float("inf")
    left = f"{left_min:.0f} min left" if left_min >= 1 else "under a minute left"
    return f" · {per_min:.1f} candidates/min, {left}"


def run_prompts(settings: GenerateSettings, fields: Sequence[str]) -> tuple[str, ...]:
    """The prompts a run with ``settings`` on ``fields`` may send (their hashes are recorded in the run): those of
    the enabled edit stages (:func:`~engine.generation.edit.pipeline.edit_prompts`), or reconstruct mode's."""
    return edit_prompts(settings, fields) if settings.mode == "edit" else RECONSTRUCT_PROMPTS


def demo_pool(project: Project, dataset_id: int, settings: GenerateSettings, fields: Sequence[str],
              progress: ProgressFn = no_progress) -> DemoPool | None:
    """The dataset's demonstration pool, read (``None`` where edit requests take no demonstrations)."""
    if settings.mode != "edit" or not settings.demonstrations or "text" not in fields:
        return None
    from engine.generation.demo_pairs import pair_counts

    if not any(pair_counts(project, dataset_id).values()):
        return None
    progress(0.0, "counterbias: reading the demonstrations")
    pool = DemoPool(project, dataset_id)
    pool.refresh()
    return pool


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
    """Make counterbias candidates for examples of a dataset version (see the package doc).

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
    vote_set = vote_source(project, dataset, vote_set_id)
    ids = ([int(r["id"]) for r in project.iter_examples(dataset.id)] if example_ids is None
           else list(dict.fromkeys(int(i) for i in example_ids)))
    own_backend = backend is None
    chat_backend = backend or create_backend(llm_config)
    key = settings.key()
    params = {
        "llm": llm_config.to_dict(), "settings": settings.to_dict(), "settings_key": key,
        "vote_set_id": vote_set["id"], "examples": len(ids),
        "prompts": {n: load_prompt(n).sha256[:12] for n in run_prompts(settings, fields)},
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
            progress(0.0, f"counterbias: loading {llm_config.model}")
            chat_backend.load(progress=lambda f, message="": progress(
                0.0, f"counterbias: {message or 'loading ' + llm_config.model} ({f:.0%})"))
            if settings.uses_triples:
                triples = extract_triples(project, dataset.id, ids, llm_config, backend=chat_backend,
                                          progress=scaled(progress, 0.0, 0.3), cancel=token)
                result.triples_failed = triples.failed_ids
            votes = votes_for(project, dataset, vote_set, vote_set_id is not None, ids)
            slots, result.skipped = plan_slots(project, dataset, ids, votes, settings, key, fields)
            mapping = gender_mapping() if settings.swap_gender else {}
            members = (list(judge) if judge is not None
                       else default_judges(project, dataset.id, list(vote_set["params"].get("models") or [])))
            result.judges = members
            result.judges_training = [] if judge is not None else judges_in_training(project, dataset.id)
            guard = LeakGuard.from_prompts(LEAK_SOURCES[settings.mode])
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
            pool = demo_pool(project, dataset.id, settings, fields, progress)
            result.demonstrations = len(pool) if pool is not None else 0
            gen_progress = scaled(progress, 0.3 if settings.uses_triples else 0.0, 1.0)
            gen_started = time.perf_counter()
            chunk_size = chunk_size or max(4, 2 * int(llm_config.concurrency))
            if slots:
                gen_progress(0.0, f"counterbias: 0/{len(slots)} candidates, the first {min(chunk_size, len(slots))} "
                             "under way")
            for start in range(0, len(slots), chunk_size):
                token.raise_if_cancelled()
                chunk = slots[start : start + chunk_size]
                if settings.mode == "edit":
                    if pool is not None and start:
                        pool.refresh()  # candidates accepted meanwhile teach this chunk
                    run_edit_chunk(EditRun(client, dataset, settings, mapping, token, guard, chunk,
                                           reader=polar_fn, finder=finder, swapper=swapper,
                                           pool=pool if pool is not None and len(pool) else None,
                                           requests=result.requests_by_stage))
                else:
                    run_reconstruct_chunk(client, chunk, dataset, settings, mapping, token, guard)
                created, failed = project.writer.run(store_slots, run.id, chunk, key, llm_config, vote_set["id"])
                result.created.extend(created)
                result.failed.extend(failed)
                if members and created:
                    # judged as they are made: a run cancelled or killed later leaves no candidate unjudged
                    # (the members' cost counts in the rate and ETA below)
                    from engine.counterbias.verify import judge_candidates

                    judge_candidates(project, created, members, cancel=token)
                done = start + len(chunk)
                gen_progress(done / max(len(slots), 1),
                             f"counterbias: {done}/{len(slots)} candidates{rate_text(done, gen_started, len(slots))}")
            progress(1.0, f"counterbias: {len(result.created)} candidates, {len(result.failed)} failed")
        finally:
            total = client.total
            result.usage, result.sent, result.cache_hits = total.usage, total.sent, total.hits
            result.seconds = time.perf_counter() - started
            run.result = summary = result.summary()
            run.message = f"{summary['created']} candidates, {summary['failed']} failed"
    return result
