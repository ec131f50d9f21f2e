"""Class probabilities from a trained member: for a label judge, and as a dataset feature.

:func:`predict` scores arbitrary texts (e.g. generated counterbias candidates: "does the
classifier now predict the target label?"). :func:`predict_dataset` scores a stored dataset
with the fields the member was trained on, so a **hypothesis-only** member (see
:func:`engine.models.config.hypothesis_only_member`) yields, per NLI example, how well the
hypothesis alone predicts the label: a feature for the statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.models.data import example_texts
from engine.models.errors import ModelError
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store import ExampleQuery, Project

__all__ = ["DatasetPredictions", "predict", "predict_dataset"]


def predict(
    project: Project,
    model_name: str,
    texts: Sequence[str] | Sequence[Sequence[str]],
    *,
    batch_size: int = 32,
    max_length: int | None = None,
    cancel: CancelToken | None = None,
) -> np.ndarray:
    """Class probabilities of ``texts`` under a trained member.

    Parameters
    ----------
    project
        The open project.
    model_name
        A trained member's name.
    texts
        Strings for a single-text member; ``(premise, hypothesis)`` tuples for a pair member
        (a hypothesis-only member takes plain hypothesis strings).
    batch_size
        Texts per forward pass.
    max_length
        Truncation (default: the member's training ``max_length``).
    cancel
        Checked between batches.

    Returns
    -------
    numpy.ndarray
        ``(len(texts), n_labels)`` float32 probabilities; columns follow the member's labels
        (``ModelInfo.labels``).
    """
    import torch

    from engine.models.encoding import encode_texts, model_inputs
    from engine.models.loading import load_member

    cancel = ensure_token(cancel)
    member = load_member(project, model_name)
    n_fields = len(member.info.fields)
    rows = [(t,) if isinstance(t, str) else tuple(t) for t in texts]
    if any(len(r) != n_fields for r in rows):
        raise ModelError(
            f"Model {member.info.name!r} reads {n_fields} text field(s) {member.info.fields}.",
            "Pass one string per example, or (premise, hypothesis) pairs for a pair model.",
        )
    length = max_length or member.info.max_length
    out = np.zeros((len(rows), len(member.info.labels)), dtype=np.float32)
    order = np.argsort([sum(len(x) for x in r) for r in rows], kind="stable")
    with member.lock, torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            cancel.raise_if_cancelled()
            idx = order[start : start + batch_size]
            batch = encode_texts(member.tokenizer, [rows[i] for i in idx], length)
            inputs = {k: v.to(member.device) for k, v in model_inputs(member.model, batch).items()}
            probs = torch.softmax(member.model(**inputs).logits.float(), dim=-1)
            out[idx] = probs.cpu().numpy()
    return out


@dataclass(frozen=True)
class DatasetPredictions:
    """A member's predictions over a dataset version.

    Attributes
    ----------
    model_name
        The member.
    example_ids
        ``(n,)`` int64 example ids, in dataset order.
    probs
        ``(n, n_labels)`` probabilities; columns follow ``labels``.
    labels
        The member's labels.
    gold
        ``(n,)`` gold label index of each example (-1 when the label is unknown to the member).
    """

    model_name: str
    example_ids: np.ndarray
    probs: np.ndarray
    labels: tuple[str, ...]
    gold: np.ndarray

    @property
    def predicted(self) -> np.ndarray:
        """``(n,)`` predicted label index."""
        return self.probs.argmax(axis=1)

    @property
    def correct(self) -> np.ndarray:
        """``(n,)`` bool: prediction equals the gold label."""
        return self.predicted == self.gold

    @property
    def gold_probability(self) -> np.ndarray:
        """``(n,)`` probability given to the gold label (NaN when unknown): the usual artefact feature."""
        out = np.full(len(self.gold), np.nan, dtype=np.float64)
        ok = self.gold >= 0
        out[ok] = self.probs[np.flatnonzero(ok), self.gold[ok]]
        return out

    @property
    def accuracy(self) -> float:
        ok = self.gold >= 0
        return float(self.correct[ok].mean()) if ok.any() else float("nan")


def predict_dataset(
    project: Project,
    model_name: str,
    dataset_id: int,
    *,
    splits: Sequence[str] | None = None,
    batch_size: int = 32,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> DatasetPredictions:
    """Score every example of a dataset version with a member, on the fields it was trained on.

    Parameters
    ----------
    splits
        Only these splits (``None``: all).
    progress, cancel
        Reported and checked per batch.
    """
    from engine.models.loading import load_member

    cancel = ensure_token(cancel)
    info = load_member(project, model_name).info
    ids = project.example_ids(ExampleQuery(dataset_id, splits=tuple(splits) if splits else None))
    label_index = {name: i for i, name in enumerate(info.labels)}
    probs = np.zeros((len(ids), len(info.labels)), dtype=np.float32)
    gold = np.full(len(ids), -1, dtype=np.int64)
    chunk = max(batch_size * 8, 256)
    for start in range(0, len(ids), chunk):
        rows = project.examples(ids[start : start + chunk])
        texts = [example_texts(r, info.fields) for r in rows]
        probs[start : start + len(rows)] = predict(project, model_name, texts, batch_size=batch_size, cancel=cancel)
        gold[start : start + len(rows)] = [label_index.get(r["label"], -1) for r in rows]
        progress(min(1.0, (start + len(rows)) / max(1, len(ids))), f"{model_name}: {start + len(rows):,}/{len(ids):,}")
    return DatasetPredictions(model_name, ids, probs, tuple(info.labels), gold)


def hypothesis_only_members(project: Project, dataset_id: int) -> list[str]:
    """Names of hypothesis-only members trained on ``dataset_id`` or on its parent version."""
    from engine.models.store import list_models

    dataset = project.dataset(dataset_id)
    ids = {dataset.id, dataset.parent_id}
    return [m.name for m in list_models(project)
            if m.dataset_id in ids and m.params.get("spec", {}).get("inputs") == "hypothesis"]


def hypothesis_only_feature(
    project: Project,
    model_name: str,
    dataset_id: int,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> dict[int, str]:
    """The ``hyp_only_pred`` statistics feature: the label a hypothesis-only member predicts.

    Returns ``{example id: predicted label}``; pass it to
    :func:`engine.stats.analysis.analyse_dataset` as ``categorical={"hyp_only_pred": ...}``.
    A feature ``hyp_only_pred=entailment`` with a high z says that the hypothesis alone gives
    the label away (Gururangan et al.; Gardner et al. 2021). The member saw the train split, so
    on that split the feature is optimistic; read it on dev/test splits for an unbiased view.
    """
    preds = predict_dataset(project, model_name, dataset_id, progress=progress, cancel=cancel)
    top = preds.probs.argmax(axis=1)
    return {int(i): preds.labels[int(k)] for i, k in zip(preds.example_ids, top, strict=True)}
