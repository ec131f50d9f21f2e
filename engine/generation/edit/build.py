"""Stage ``build``: the candidate is the original with its edited sentences replaced."""

from __future__ import annotations

from engine.counterbias.edit import assemble
from engine.generation.edit.state import EditRun, plan_key
from engine.generation.plan import Slot

__all__ = ["build"]


def build(run: EditRun) -> None:
    """Assemble the candidate of every slot whose fields were all planned (``run.live``)."""
    run.live = [s for s in run.slots if s.error is None and all(plan_key(s, p) in run.layout for p in s.fields)]
    for slot in run.live:
        _build(run, slot)


def _build(run: EditRun, slot: Slot) -> None:
    for plan in slot.fields:
        base, spans = run.layout[plan_key(slot, plan)]
        plan.text = assemble(base, spans, {e.index: e.new for e in plan.edits if e.new is not None},
                             other=run.swapper_of(plan))
