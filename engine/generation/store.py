"""Storing a chunk of slots: one ``candidates`` row each (a retried slot replaces its failed row), triples marked."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from engine.counterbias.triple_store import current_rows
from engine.generation.plan import METHOD, FieldPlan, Slot
from engine.llm.config import LLMConfig
from engine.store.schema import now
from engine.text.distance import word_edit_distance

__all__ = ["store_slots"]


def store_slots(conn: sqlite3.Connection, run_id: int, slots: Sequence[Slot], key: str, llm: LLMConfig,
                vote_set_id: int) -> tuple[list[int], list[int]]:
    """Write the slots (run in the project's writer); return the ids of the candidates made and of those failed."""
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
