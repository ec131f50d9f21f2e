"""Compute per-word scores for examples with a loaded member (no store access).

:func:`attribute_texts` is the compute kernel shared by the cached project job
(:mod:`engine.attribution.jobs`) and the benchmarks: it sorts examples by length, encodes
them in batches, picks the target class, runs the method once per batch and maps the group
scores back onto each field's canonical words.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.attribution.errors import TargetLabelError
from engine.attribution.method import MethodSettings
from engine.attribution.registry import get_method
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.text import group_to_word_scores

__all__ = [
    "ExampleAttribution",
    "ExampleInput",
    "FieldScores",
    "attribute_texts",
    "iter_attributions",
    "plan_batches",
    "resolve_targets",
]

#: Target rules: explain the predicted class, the gold label, or a named label.
TARGET_RULES = ("predicted", "label")


@dataclass(frozen=True)
class ExampleInput:
    """One example to explain: an id (for seeding and storage), its field texts and gold label."""

    id: int
    texts: tuple[str, ...]
    label: str | None = None


@dataclass(frozen=True)
class FieldScores:
    """Scores of one field's canonical words.

    Attributes
    ----------
    field
        Example column (``text``, ``premise`` or ``hypothesis``).
    words
        Canonical words of the field, up to the last word the model saw (truncation cuts the
        tail off).
    scores
        One float per word; 0.0 for a word inside the prefix that no token covered.
    """

    field: str
    words: list[str]
    scores: np.ndarray


@dataclass(frozen=True)
class ExampleAttribution:
    """A method's explanation of one example for one member.

    Attributes
    ----------
    example_id
        The example.
    target, target_index
        The explained class.
    fields
        One :class:`FieldScores` per field the member reads.
    probability
        The model's probability of the target class.
    delta
        IG convergence delta (``None`` for other methods).
    """

    example_id: int
    target: str
    target_index: int
    fields: tuple[FieldScores, ...]
    probability: float
    delta: float | None = None


@dataclass
class AttributionStats:
    """Counters of one :func:`attribute_texts` call."""

    examples: int = 0
    forward_calls: int = 0
    forward_rows: int = 0
    seconds: float = 0.0
    deltas: list[float] = field(default_factory=list)


def resolve_targets(target: str, labels: Sequence[str], gold: Sequence[str | None], predicted: np.ndarray) -> np.ndarray:
    """Class index to explain for every example.

    Parameters
    ----------
    target
        ``"predicted"``, ``"label"`` (the gold label) or one of ``labels``.

    Raises
    ------
    TargetLabelError
        For an unknown label, or ``"label"`` on an example without a gold label the model knows.
    """
    index = {name: i for i, name in enumerate(labels)}
    if target == "predicted":
        return np.asarray(predicted, dtype=np.int64)
    if target == "label":
        missing = [g for g in gold if g not in index]
        if missing:
            raise TargetLabelError(
                f"Gold label {missing[0]!r} is not one of the model's labels {list(labels)}.",
                "Explain the predicted class instead (target='predicted').",
            )
        return np.array([index[g] for g in gold], dtype=np.int64)
    if target not in index:
        raise TargetLabelError(
            f"{target!r} is not a label of the model ({', '.join(labels)}).",
            "Use 'predicted', 'label' or one of the model's labels.",
        )
    return np.full(len(gold), index[target], dtype=np.int64)


def plan_batches(lengths: Sequence[int], batch_size: int, max_padding: float) -> list[list[int]]:
    """Group example indices into batches of similar token length.

    Examples are sorted by length; a batch grows until it holds ``batch_size`` examples or
    adding the next one would make more than ``max_padding`` of its tokens padding. On a CPU
    padding costs as much as real tokens and one example's interpolation steps already fill
    the cores, so the default there is 0 (only equal lengths share a batch); on a GPU mixing
    lengths is cheap and big batches pay off.

    Examples
    --------
    >>> plan_batches([5, 3, 5, 9, 3], batch_size=4, max_padding=0.0)
    [[1, 4], [0, 2], [3]]
    >>> plan_batches([5, 3, 5, 9, 3], batch_size=4, max_padding=0.5)
    [[1, 4, 0, 2], [3]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0
    for i in order:
        n = int(lengths[i])
        if current:
            longest = max(n, int(lengths[current[-1]]))
            waste = 1.0 - (total + n) / (longest * (len(current) + 1))
            if len(current) >= batch_size or waste > max_padding + 1e-9:
                batches.append(current)
                current, total = [], 0
        current.append(i)
        total += n
    if current:
        batches.append(current)
    return batches


def default_max_padding(model: object) -> float:
    """0 on a CPU (no padding), 0.5 on an accelerator (see :func:`plan_batches`)."""
    device = next(model.parameters()).device  # type: ignore[attr-defined]
    return 0.0 if device.type == "cpu" else 0.5


def iter_attributions(
    model: object,
    tokenizer: object,
    labels: Sequence[str],
    fields: Sequence[str],
    examples: Sequence[ExampleInput],
    method: str,
    settings: MethodSettings,
    *,
    target: str = "predicted",
    max_length: int = 128,
    batch_size: int = 16,
    max_padding: float | None = None,
    cancel: CancelToken | None = None,
    stats: AttributionStats | None = None,
) -> Iterator[tuple[list[int], list[ExampleAttribution]]]:
    """Explain ``examples`` batch by batch, yielding each batch as soon as it is done.

    Parameters are those of :func:`attribute_texts`; ``cancel`` is checked before every batch.

    Yields
    ------
    positions, results
        Indices into ``examples`` and their results, in the same order.
    """
    import torch

    from engine.attribution.batch import encode_batch
    from engine.attribution.forward import ClassifierForward
    from engine.models.encoding import encode_texts

    cancel = ensure_token(cancel)
    if not examples:
        return
    impl = get_method(method)
    forward = ClassifierForward(model, output=settings.output)
    lengths = [len(ids) for ids in encode_texts(tokenizer, [ex.texts for ex in examples], max_length, padding=False, return_tensors=None)["input_ids"]]
    padding = default_max_padding(model) if max_padding is None else max_padding
    for idx in plan_batches(lengths, batch_size, padding):
        cancel.raise_if_cancelled()
        started = time.perf_counter()
        calls, rows = forward.calls, forward.rows
        chunk = [examples[i] for i in idx]
        batch = encode_batch(model, tokenizer, [ex.texts for ex in chunk], max_length)
        with torch.no_grad():
            out = forward(batch.input_ids, *batch.forward_args())
            probs = out if settings.output == "prob" else torch.softmax(out, dim=-1)
        probs_np = probs.float().cpu().numpy()
        targets_np = resolve_targets(target, labels, [ex.label for ex in chunk], probs_np.argmax(axis=1))
        targets = torch.as_tensor(targets_np, device=batch.input_ids.device)
        group_scores, deltas = impl.group_scores(forward, batch, targets, settings, seed_ids=[ex.id for ex in chunk])
        results = []
        for j, ex in enumerate(chunk):
            per_field = []
            for f, name in enumerate(fields):
                al = batch.alignments[j][f]
                off = batch.group_offset[j][f]
                words = group_to_word_scores(al, group_scores[j][off : off + al.n_groups])
                keep = al.n_covered_prefix
                per_field.append(
                    FieldScores(name, [w.text for w in al.words[:keep]], np.nan_to_num(words[:keep], nan=0.0))
                )
            results.append(
                ExampleAttribution(
                    example_id=ex.id,
                    target=labels[int(targets_np[j])],
                    target_index=int(targets_np[j]),
                    fields=tuple(per_field),
                    probability=float(probs_np[j, targets_np[j]]),
                    delta=None if deltas is None else deltas[j],
                )
            )
        if stats is not None:
            stats.examples += len(chunk)
            stats.forward_calls += forward.calls - calls
            stats.forward_rows += forward.rows - rows
            stats.seconds += time.perf_counter() - started
            stats.deltas.extend(r.delta for r in results if r.delta is not None)
        yield list(idx), results


def attribute_texts(
    model: object,
    tokenizer: object,
    labels: Sequence[str],
    fields: Sequence[str],
    examples: Sequence[ExampleInput],
    method: str,
    settings: MethodSettings,
    *,
    target: str = "predicted",
    max_length: int = 128,
    batch_size: int = 16,
    max_padding: float | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
    stats: AttributionStats | None = None,
) -> list[ExampleAttribution]:
    """Explain ``examples`` with one method; results in the order given.

    Parameters
    ----------
    model, tokenizer
        A sequence classifier (eval mode) and its fast tokenizer.
    labels
        The model's label names (column order of its output).
    fields
        Names of the example fields ``ExampleInput.texts`` holds.
    examples
        What to explain.
    method, settings
        Registered method name and its settings.
    target
        ``"predicted"``, ``"label"`` or a label name.
    max_length
        Truncation length.
    batch_size
        Most examples per batch (IG and Shapley sampling run one call per batch).
    max_padding
        Largest share of padding tokens a batch may hold (``None``: 0 on CPU, 0.5 on GPU;
        see :func:`plan_batches`).
    progress, cancel
        Reported and checked once per batch.
    stats
        Filled with forward-pass counters when given.
    """
    out: list[ExampleAttribution | None] = [None] * len(examples)
    done = 0
    for positions, results in iter_attributions(
        model, tokenizer, labels, fields, examples, method, settings,
        target=target, max_length=max_length, batch_size=batch_size, max_padding=max_padding, cancel=cancel, stats=stats,
    ):
        for i, r in zip(positions, results):
            out[i] = r
        done += len(results)
        progress(done / len(examples), f"{method}: {done:,}/{len(examples):,} examples")
    return [r for r in out if r is not None]
