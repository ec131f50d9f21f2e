"""Cached, resumable attribution jobs over a project's examples.

Every result is stored in ``attributions`` under ``(model_id, method, settings_key,
example_id, field)``. A job first asks the store which examples are already done and computes
only the rest, so a rerun with the same settings loads no model and runs no forward pass, and
an interrupted job resumes where it stopped (each batch is committed as soon as it is
computed).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.attribution.cache import cached_example_ids, write_attributions
from engine.attribution.kernel import AttributionStats, ExampleInput, iter_attributions
from engine.attribution.method import MethodSettings, settings_key
from engine.attribution.registry import resolve_settings
from engine.models.data import example_texts
from engine.models.store import ModelInfo, get_model
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store import ExampleQuery, Project

__all__ = ["DEFAULT_BATCH_SIZE", "AttributionRun", "attribute_dataset", "attribute_ensemble", "settings_key_for"]

#: Example rows read from the store at a time.
READ_CHUNK = 1024

#: Examples per batch by method (IG and Shapley sampling batch across examples).
DEFAULT_BATCH_SIZE = {"ig": 16, "lime": 8, "shapley": 8}


@dataclass(frozen=True)
class AttributionRun:
    """What one job did.

    Attributes
    ----------
    model_name, model_id, method, settings_key
        The cache key parts.
    requested
        Examples asked for.
    computed, cached
        Examples computed now / found in the store.
    forward_calls
        Model forward passes made (0 on a fully cached rerun).
    max_abs_delta
        Largest |IG convergence delta| among computed examples (``None`` for other methods).
    seconds
        Wall time.
    """

    model_name: str
    model_id: int
    method: str
    settings_key: str
    requested: int
    computed: int
    cached: int
    forward_calls: int
    max_abs_delta: float | None
    seconds: float


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def settings_key_for(
    info: ModelInfo, method: str, settings: MethodSettings | Mapping[str, Any] | None = None, *, target: str = "predicted", max_length: int | None = None
) -> str:
    """The cache key a job with these arguments uses for ``info``."""
    resolved = resolve_settings(method, settings)
    return settings_key(method, resolved, target=target, max_length=max_length or info.max_length)


def _example_ids(project: Project, dataset_id: int, example_ids: Sequence[int] | None, splits: Sequence[str] | None) -> list[int]:
    if example_ids is not None:
        return [int(i) for i in example_ids]
    return [int(i) for i in project.example_ids(ExampleQuery(dataset_id, splits=tuple(splits) if splits else None))]


def attribute_dataset(
    project: Project,
    model_name: str,
    dataset_id: int,
    *,
    method: str = "ig",
    settings: MethodSettings | Mapping[str, Any] | None = None,
    target: str = "predicted",
    example_ids: Sequence[int] | None = None,
    splits: Sequence[str] | None = None,
    max_length: int | None = None,
    batch_size: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> AttributionRun:
    """Compute (or reuse) one member's word scores with one method.

    Parameters
    ----------
    project
        The open project.
    model_name
        A trained member.
    dataset_id
        Dataset version whose examples are explained.
    method, settings
        Registered method and its settings (instance, dict of options, or ``None``).
    target
        ``"predicted"`` (default), ``"label"`` or a label name.
    example_ids
        Explain only these examples (default: the whole dataset, or ``splits``).
    splits
        Restrict to these splits when ``example_ids`` is not given.
    max_length
        Truncation (default: the member's training length).
    batch_size
        Examples per batch (default per method, :data:`DEFAULT_BATCH_SIZE`).
    progress, cancel
        Reported and checked once per batch; finished batches stay stored on cancel.

    Returns
    -------
    AttributionRun
    """
    started = time.perf_counter()
    cancel = ensure_token(cancel)
    info = get_model(project, model_name)
    resolved = resolve_settings(method, settings)
    length = max_length or info.max_length
    key = settings_key(method, resolved, target=target, max_length=length)
    ids = _example_ids(project, dataset_id, example_ids, splits)
    done = cached_example_ids(project, info.id, method, key, ids, info.fields)
    todo = [i for i in ids if i not in done]
    stats = AttributionStats()
    if todo:
        from engine.models.loading import load_member

        progress(0.0, f"{info.name}: loading")
        member = load_member(project, info.name)
        size = batch_size or DEFAULT_BATCH_SIZE.get(method, 8)
        pending = []
        finished = 0
        try:
            with member.lock:  # attribution hooks into the model: one job at a time
                for start in range(0, len(todo), READ_CHUNK):
                    rows = project.examples(todo[start : start + READ_CHUNK])
                    inputs = [ExampleInput(int(r["id"]), example_texts(r, info.fields), r["label"]) for r in rows]
                    for _, results in iter_attributions(
                        member.model,
                        member.tokenizer,
                        info.labels,
                        info.fields,
                        inputs,
                        method,
                        resolved,
                        target=target,
                        max_length=length,
                        batch_size=size,
                        cancel=cancel,
                        stats=stats,
                    ):
                        # each batch is committed on its own, so a cancel loses at most one batch
                        pending.append(project.writer.submit(write_attributions, info.id, method, key, results))
                        finished += len(results)
                        eta = (time.perf_counter() - started) / finished * (len(todo) - finished)
                        progress(
                            finished / len(todo),
                            f"{info.name} · {method}: {finished:,}/{len(todo):,} examples, ETA {_fmt_eta(eta)}",
                        )
        finally:
            for future in pending:
                future.result()
    progress(1.0, f"{info.name} · {method}: {len(todo):,} computed, {len(done):,} cached")
    deltas = np.abs(stats.deltas) if stats.deltas else None
    return AttributionRun(
        model_name=info.name,
        model_id=info.id,
        method=method,
        settings_key=key,
        requested=len(ids),
        computed=len(todo),
        cached=len(done),
        forward_calls=stats.forward_calls,
        max_abs_delta=float(deltas.max()) if deltas is not None else None,
        seconds=time.perf_counter() - started,
    )


def attribute_ensemble(
    project: Project,
    model_names: Sequence[str],
    dataset_id: int,
    *,
    methods: Mapping[str, MethodSettings | Mapping[str, Any] | None] | Sequence[str] = ("ig",),
    target: str = "predicted",
    example_ids: Sequence[int] | None = None,
    splits: Sequence[str] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> list[AttributionRun]:
    """:func:`attribute_dataset` for every member x method (each gets an equal progress slice)."""
    plan = dict(methods) if isinstance(methods, Mapping) else {m: None for m in methods}
    ids = _example_ids(project, dataset_id, example_ids, splits)
    jobs = [(m, meth) for m in model_names for meth in plan]
    runs = []
    for j, (name, meth) in enumerate(jobs):
        runs.append(
            attribute_dataset(
                project,
                name,
                dataset_id,
                method=meth,
                settings=plan[meth],
                target=target,
                example_ids=ids,
                progress=scaled(progress, j / len(jobs), (j + 1) / len(jobs)),
                cancel=cancel,
            )
        )
    return runs
