"""The ``models`` rows of trained members (reads via ``project.db``, writes via the writer)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.models.errors import ModelNotFoundError
from engine.store import Project
from engine.store.paths import inside_project, safe_remove
from engine.store.schema import now

__all__ = ["ModelInfo", "delete_model", "find_model", "get_model", "list_models"]


@dataclass(frozen=True)
class ModelInfo:
    """A trained member as stored in ``models``.

    Attributes
    ----------
    id, name, backbone
        Row id, unique name, backbone registry name.
    stored_path, project_path
        The folder as the project stores it (relative to its files folder) and the ``.cbproj`` file.
    folder
        Absolute folder holding ``config.json``, ``model.safetensors`` and the tokenizer; checked on
        every use to lie inside the project's files folder
        (:func:`engine.store.paths.inside_project`: CB150, CB151).
    params
        ``{"spec": MemberSpec dict, "config_hash", "dataset_id", "labels", "fields", "task"}``.
    metrics
        ``{"dev_accuracy", "best_epoch", "epochs_run", "train_rows", "dev_rows", "dev_source", ...}``.
    """

    id: int
    name: str
    backbone: str
    stored_path: str | None
    project_path: Path
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    run_id: int | None = None

    @property
    def folder(self) -> Path:
        """The member's folder inside the project's files folder (refused when it would lie outside)."""
        return inside_project(self.project_path, self.stored_path, what=f"the folder of model {self.name!r}")

    @property
    def labels(self) -> list[str]:
        return list(self.params.get("labels", []))

    @property
    def fields(self) -> tuple[str, ...]:
        """Example columns the member reads (``("text",)``, ``("premise", "hypothesis")`` or ``("hypothesis",)``)."""
        return tuple(self.params.get("fields", ("text",)))

    @property
    def max_length(self) -> int:
        return int(self.params.get("spec", {}).get("train", {}).get("max_length", 128))

    @property
    def preset(self) -> str:
        """The training preset the member was trained with (``"fast-cpu"``, ``"quick-cpu"``, ...)."""
        return str(self.metrics.get("preset") or self.params.get("spec", {}).get("train", {}).get("preset", "?"))

    @property
    def strategy(self) -> str:
        """What training updated: ``"fine-tune"`` (the whole network), ``"cached-top"`` or ``"cached-head"``."""
        strategy = self.metrics.get("strategy") or self.params.get("spec", {}).get("train", {}).get("strategy")
        return str(strategy or "fine-tune")

    @property
    def training_summary(self) -> str:
        """The preset with what it trained and on how many rows, e.g. ``sample-cpu: top layer, 1,000 rows``."""
        what = {"fine-tune": "fine-tuned", "cached-top": "top layer", "cached-head": "head only"}
        parts = [what.get(self.strategy, self.strategy)]
        rows = self.metrics.get("train_rows")
        if rows is not None:
            parts.append(f"{int(rows):,} rows")
        return f"{self.preset}: {', '.join(parts)}"

    @property
    def config_hash(self) -> str:
        return str(self.params.get("config_hash", ""))

    @property
    def dataset_id(self) -> int | None:
        value = self.params.get("dataset_id")
        return int(value) if value is not None else None


def _from_row(project: Project, row: dict[str, Any]) -> ModelInfo:
    return ModelInfo(
        id=int(row["id"]),
        name=row["name"],
        backbone=row["backbone"],
        stored_path=row["path"],
        project_path=Path(project.path),
        params=json.loads(row["params"] or "{}"),
        metrics=json.loads(row["metrics"] or "{}"),
        created_at=row["created_at"],
        run_id=row["run_id"],
    )


def list_models(project: Project) -> list[ModelInfo]:
    """Every trained model, oldest first."""
    return [_from_row(project, r) for r in project.db.query("SELECT * FROM models ORDER BY id")]


def find_model(project: Project, name: str) -> ModelInfo | None:
    """The model called ``name``, or ``None``."""
    rows = list(project.db.query("SELECT * FROM models WHERE name = ?", [name]))
    return _from_row(project, rows[0]) if rows else None


def get_model(project: Project, ref: str | int) -> ModelInfo:
    """A model by name or id.

    Raises
    ------
    ModelNotFoundError
    """
    if isinstance(ref, int):
        rows = list(project.db.query("SELECT * FROM models WHERE id = ?", [ref]))
        info = _from_row(project, rows[0]) if rows else None
    else:
        info = find_model(project, ref)
    if info is None:
        names = ", ".join(m.name for m in list_models(project)) or "none yet"
        raise ModelNotFoundError(f"No trained model {ref!r} in {project.path.name}.", f"Train it first, or use one of: {names}.")
    return info


def insert_model(
    conn: sqlite3.Connection,
    *,
    name: str,
    backbone: str,
    path: str,
    params: dict[str, Any],
    metrics: dict[str, Any],
    run_id: int | None,
) -> int:
    """Insert (or replace) the ``models`` row inside a write task; return its id."""
    row = conn.execute("SELECT id FROM models WHERE name = ?", (name,)).fetchone()
    values = (run_id, backbone, path, json.dumps(params), json.dumps(metrics), now())
    if row:
        conn.execute(
            "UPDATE models SET run_id=?, backbone=?, path=?, params=?, metrics=?, created_at=? WHERE id=?",
            (*values, row[0]),
        )
        return int(row[0])
    cursor = conn.execute(
        "INSERT INTO models (run_id, backbone, path, params, metrics, created_at, name) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (*values, name),
    )
    return int(cursor.lastrowid)


def delete_model_rows(conn: sqlite3.Connection, model_id: int) -> None:
    """Delete a model row, its attributions and the votes it took part in (inside a write task)."""
    conn.execute("DELETE FROM attributions WHERE model_id = ?", (model_id,))
    conn.execute(
        "DELETE FROM vote_sets WHERE id IN (SELECT vs.id FROM vote_sets vs, json_each(vs.params, '$.model_ids') j "
        "WHERE j.value = ?)",
        (model_id,),
    )
    conn.execute("DELETE FROM models WHERE id = ?", (model_id,))


def delete_model(project: Project, name: str) -> None:
    """Delete a trained model: its row, its attributions and its folder.

    A row without a folder (``path`` NULL) is deleted alone.

    Raises
    ------
    engine.errors.StoredPathError, engine.errors.StoredLinkError
        The stored folder lies outside the project's files folder: nothing is deleted.
    engine.errors.RemoveFailedError
        The folder could not be removed (the row is gone already).
    """
    info = get_model(project, name)
    folder = info.folder if info.stored_path is not None else None  # checked before anything is deleted
    project.writer.run(delete_model_rows, info.id)
    if folder is not None:
        safe_remove(project, folder)
