"""Stages ``residual`` and ``unread``: what the reader still reads as the original label in the finished texts, and
the slots whose sentences it could not read."""

from __future__ import annotations

from engine.counterbias.sentence_reading import reads_ahead, residual_sentences
from engine.generation.edit.state import EditRun
from engine.text.sentences import split_sentences

__all__ = ["fail_unread", "record_residual"]


def record_residual(run: EditRun) -> None:
    """Record the sentences of each finished text that the reader still reads as the original label (most
    answers come from the cache: untouched sentences were read when the edits were planned); only with a reader
    whose reading makes the residual check."""
    reader = run.reader
    if not (reads_ahead(reader) and reader.checks_residual):
        return
    plans = [(slot, plan) for slot in run.live for plan in slot.fields if plan.field == "text" and plan.text]
    found = residual_sentences(reader, [(plan.text or "", str(slot.example["label"])) for slot, plan in plans])
    for (_, plan), left in zip(plans, found, strict=True):
        plan.residual = left


def fail_unread(run: EditRun) -> None:
    """Fail (retriably) a slot whose sentences, edits or finished text could not be read: its edits were chosen and
    judged without that reading; the next run sends only what failed (the rest comes from the cache)."""
    reader = run.reader
    if not reads_ahead(reader):
        return
    for slot in run.slots:
        texts = [s for plan in slot.fields for s in (*plan.others, *(e.answer or "" for e in plan.edits),
                                                     *split_sentences(plan.text or ""))]
        failure = reader.failure_for(texts) if slot.error is None else None
        if failure is not None:
            slot.fail("read", f"A sentence could not be read: {failure.message}", retriable=failure.retriable,
                      hint=failure.hint)
