"""Any ensemble backbone as the downstream classifier, fine-tuned by the engine's own training.

The condition's rows become a ``filtered`` dataset version (members only, no copied text), and
:func:`engine.models.train.train_member` fine-tunes a member on it with the chosen preset; the
member is stored like any other, so a rerun with the same rows, backbone, preset and seed reuses
it. Rows must come from train splits (or have no split): the trainer holds out its own dev rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.evaluation.classifiers import CLASSIFIERS
from engine.evaluation.errors import BadConditionError, ClassifierError

if TYPE_CHECKING:
    from engine.evaluation.conditions import TrainingRows
    from engine.progress import CancelToken, ProgressFn
    from engine.store import Project

__all__ = ["BackboneClassifier", "condition_dataset"]


class _FittedMember:
    def __init__(self, project: Project, model_name: str, labels: Sequence[str], pair: bool) -> None:
        self.project = project
        self.model_name = model_name
        self.labels_ = list(labels)
        self.pair = pair

    def predict(self, texts: Sequence[tuple[str, ...]]) -> list[str]:
        from engine.models.predict import predict

        inputs = [t for t in texts] if self.pair else [t[0] for t in texts]
        probs = predict(self.project, self.model_name, inputs)
        return [self.labels_[i] for i in probs.argmax(axis=1)]


def condition_dataset(project: Project, rows: TrainingRows, tag: str, seed: int) -> int:
    """The ``filtered`` dataset version holding ``rows`` (made once, reused by name)."""
    from engine.models.data import TRAIN_SPLITS
    from engine.store.project import insert_dataset

    name = f"eval-train {tag} seed {seed}"
    existing = list(project.db.query("SELECT id FROM datasets WHERE name = ? AND state = 'ready'", [name]))
    if existing:
        return int(existing[0]["id"])
    examples = project.examples(rows.example_ids)
    splits = {(r["split"] or "").strip().lower() for r in examples}
    if not (splits <= TRAIN_SPLITS or splits == {""}):
        raise BadConditionError(
            f"A backbone trains on train-split rows; this condition holds splits {sorted(splits)}.",
            "Give each source a train split (DATASET:train), or use tfidf-lr.",
        )
    labels = sorted(set(rows.labels))
    parent = int(examples[0]["dataset_id"])

    def write(conn: sqlite3.Connection) -> int:
        new_id = insert_dataset(conn, name=name, kind="filtered", task=rows.task, labels=labels, parent_id=parent,
                                source="downstream evaluation", params={"evaluation_condition": tag, "seed": seed})
        conn.executemany("INSERT INTO dataset_members VALUES (?, ?, ?)",
                         ((new_id, pos, eid) for pos, eid in enumerate(rows.example_ids)))
        conn.execute("UPDATE datasets SET row_count = ? WHERE id = ?", (len(rows.example_ids), new_id))
        return new_id

    return int(project.writer.run(write))


@CLASSIFIERS.register("backbone")
class BackboneClassifier:
    """A fine-tuned backbone (``backbone:<name>``).

    Parameters
    ----------
    backbone
        Backbone registry name (e.g. ``minilm-l6``).
    preset
        Training preset (:func:`engine.models.config.preset_names`).
    train
        Extra :class:`~engine.models.config.TrainConfig` overrides (JSON).
    """

    def __init__(self, backbone: str, preset: str = "fast-cpu", train: dict[str, Any] | None = None) -> None:
        self.backbone = backbone
        self.preset = preset
        self.train = dict(train or {})

    @property
    def label(self) -> str:
        return f"backbone:{self.backbone}"

    def params(self) -> dict[str, Any]:
        return {"backbone": self.backbone, "preset": self.preset, "train": self.train}

    def fit(self, project: Project, rows: TrainingRows, seed: int, *, tag: str,
            progress: ProgressFn, cancel: CancelToken) -> _FittedMember:
        from engine.models.config import MemberSpec, train_preset
        from engine.models.registry import available_backbones
        from engine.models.train import train_member

        if self.backbone not in available_backbones():
            raise ClassifierError(f"No backbone called {self.backbone!r}.",
                                  f"Use one of: {', '.join(available_backbones())}.")
        dataset_id = condition_dataset(project, rows, tag, seed)
        spec = MemberSpec(f"eval-{self.backbone}-{self.preset}-{tag}-s{seed}", self.backbone, {},
                          train_preset(self.preset, self.backbone, **{**self.train, "seed": seed}))
        result = train_member(project, dataset_id, spec, progress=progress, cancel=cancel)
        return _FittedMember(project, spec.name, result.model.labels, rows.task == "pair")
