"""The augmented dataset D_ori ∪ D_cb: every original example plus the accepted candidates.

Each accepted candidate becomes an ``examples`` row with ``source='augmented'``,
``method`` (e.g. ``coba``), ``parent_id`` (the original example), ``label`` = its target
label, the parent's split, and ``meta`` = provenance: candidate id, run, backend and model,
judge scores, sample, whether the analyst edited it. The new version is an ``augmented``
dataset whose members are the original's examples followed by the new rows, so the
foundation's exporter writes it with provenance columns. An example row made from a
candidate is reused by later versions (no duplicates).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.counterbias.review import candidate_rows
from engine.errors import CounterbiasError
from engine.progress import no_progress
from engine.store.project import ExampleQuery, insert_dataset
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.progress import CancelToken, ProgressFn
    from engine.store.project import DatasetInfo, Project

__all__ = ["AugmentResult", "NothingAcceptedError", "build_augmented_dataset"]


class NothingAcceptedError(CounterbiasError):
    """No candidate of the dataset is accepted yet."""

    code = "CB820"


@dataclass(frozen=True)
class AugmentResult:
    dataset: DatasetInfo
    original: int
    added: int


def build_augmented_dataset(
    project: Project,
    dataset_id: int,
    name: str | None = None,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> AugmentResult:
    """Create the augmented version of ``dataset_id`` from its accepted candidates.

    The new version is written in one transaction: a cancel before it leaves nothing behind.

    Raises
    ------
    NothingAcceptedError
        When no candidate is accepted.
    """
    progress = progress or no_progress
    if cancel is not None:
        cancel.raise_if_cancelled()
    progress(0.0, "reading the accepted candidates")
    dataset = project.dataset(dataset_id)
    accepted = candidate_rows(project, dataset_id=dataset.id, statuses=("accepted",))
    if not accepted:
        raise NothingAcceptedError(f"No accepted candidates for dataset {dataset.name!r}.",
                                   "Review the proposed edits and accept some (key A) first.")
    name = name or project.unique_dataset_name(f"{dataset.name}+counterbias")
    project.check_name_free(name)
    members = [int(i) for i in project.example_ids(ExampleQuery(dataset.id))]  # in dataset order
    if cancel is not None:
        cancel.raise_if_cancelled()
    progress(0.5, f"writing {name!r}: {len(members):,} originals + {len(accepted):,} accepted")

    def write(conn: sqlite3.Connection) -> int:
        new_id = insert_dataset(conn, name=name, kind="augmented", task=dataset.task, labels=dataset.labels,
                                parent_id=dataset.id, source=f"counterbias review of {dataset.name}",
                                params={"accepted": len(accepted), "original": len(members)})
        added = []
        for cand in accepted:
            added.append(_example_for(conn, new_id, cand))
        ids = members + added
        conn.executemany("INSERT INTO dataset_members VALUES (?, ?, ?)",
                         ((new_id, pos, eid) for pos, eid in enumerate(ids)))
        conn.execute("UPDATE datasets SET row_count = ? WHERE id = ?", (len(ids), new_id))
        return new_id

    new = project.dataset(project.writer.run(write))
    progress(1.0, f"created {name!r}")
    return AugmentResult(new, len(members), len(accepted))


def _example_for(conn: sqlite3.Connection, dataset_id: int, cand: dict) -> int:
    meta = cand["meta"]
    generated = meta.get("generated") or {}
    edited = any(cand.get(f) != text for f, text in generated.items())
    provenance = {
        "candidate_id": cand["id"], "run_id": cand["run_id"], "backend": meta.get("backend"),
        "model": meta.get("model"), "sample": meta.get("sample"), "judge": cand["scores"].get("judge"),
        "spurious_kept": cand["scores"].get("spurious_kept"), "edited_by_analyst": edited,
        # every verification check's verdict and reason, and the LLM judge's answer when it was asked
        "verdicts": cand["scores"].get("verdicts"), "passes": cand["scores"].get("passes"),
        "llm_judge": cand["scores"].get("llm_judge"),
        "original_label": meta.get("original_label"),
    }
    # Reuse the row if an earlier version already holds this candidate with the same text.
    for row in conn.execute("SELECT id, text, premise, hypothesis FROM examples WHERE source = 'augmented' "
                            "AND json_extract(meta, '$.candidate_id') = ?", (cand["id"],)):
        if (row[1], row[2], row[3]) == (cand["text"], cand["premise"], cand["hypothesis"]):
            return int(row[0])
    parent = conn.execute("SELECT split FROM examples WHERE id = ?", (cand["example_id"],)).fetchone()
    cursor = conn.execute(
        "INSERT INTO examples (dataset_id, text, premise, hypothesis, label, split, source, method, parent_id, "
        "target_label, created_at, meta) VALUES (?, ?, ?, ?, ?, ?, 'augmented', ?, ?, ?, ?, ?)",
        (dataset_id, cand["text"], cand["premise"], cand["hypothesis"], cand["target_label"],
         parent[0] if parent else None, cand["method"], cand["example_id"], cand["target_label"], now(),
         json.dumps(provenance, ensure_ascii=False)),
    )
    return int(cursor.lastrowid)
