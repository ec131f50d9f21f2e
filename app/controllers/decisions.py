"""Review decisions on counterbias candidates, undoable, and the candidates list of the Counterbias tab.

Decisions are quick single writes done on the GUI thread (a streamed import yields the project's
writer between its chunks, so they never wait behind it). Every decision is a
:class:`DecisionCommand` on :attr:`DecisionsController.undo_stack` (Edit ▸ Undo / Redo), whose undo
calls :func:`engine.counterbias.review.restore`. An edited text is judged again as a job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QUndoCommand, QUndoStack

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.counterbias.review import (
    candidate_rows_with_originals,
    load_candidate,
    passing_ids,
    restore,
    set_decision,
    with_originals,
)
from engine.counterbias.verify import judge_candidates, judged_by
from engine.errors import CounterbiasError
from widgets.review_panel import ReviewPanel
from widgets.wording import count_of

if TYPE_CHECKING:
    from engine.counterbias.review import CandidateState

__all__ = ["DecisionCommand", "DecisionsController"]


class DecisionCommand(QUndoCommand):
    """One review decision, already applied when pushed; undo restores the state before it.

    Parameters
    ----------
    controller
        The decisions controller (it applies decisions and refreshes the view).
    candidate_id, status, text
        The decision (``text``: an edit).
    before
        The candidate's state before the decision (from ``set_decision``).
    """

    def __init__(self, controller: DecisionsController, candidate_id: int, status: str, text: str | None,
                 before: CandidateState) -> None:
        verb = "Edit" if text is not None else {"accepted": "Accept", "rejected": "Reject"}.get(status, "Decide")
        super().__init__(f"{verb} candidate {candidate_id}")
        self.controller = controller
        self.candidate_id = candidate_id
        self.status = status
        self.text = text
        self.before = before
        self._applied = True  # pushed after the first application

    def redo(self) -> None:
        if self._applied:
            return
        self.controller.run_write(set_decision, self.candidate_id, self.status, self.text)
        self._applied = True
        self._changed()

    def undo(self) -> None:
        self.controller.run_write(restore, self.candidate_id, self.before)
        self._applied = False
        self._changed()

    def _changed(self) -> None:
        self.controller.candidate_changed(self.candidate_id)
        if self.text is not None:
            self.controller.rejudge(self.candidate_id)


class DecisionsController(PanelController):
    """Accepts, rejects and edits candidates (undoably) and keeps the candidates list current."""

    panel: ReviewPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ReviewPanel) -> None:
        super().__init__(session, jobs, panel)
        self.undo_stack = QUndoStack(self)
        #: Candidate id -> judge again when the running judge job ends (see :meth:`rejudge`).
        self._judging: dict[int, bool] = {}
        panel.decisionRequested.connect(self.decide)
        panel.acceptPassingRequested.connect(self.accept_passing)
        panel.advance.setChecked(bool(session.settings.get("review_advance")))
        panel.advance.toggled.connect(lambda on: session.settings.set("review_advance", bool(on)))

    # ------------------------------------------------------------------ the list
    def reload_candidates(self) -> None:
        """List the shown dataset's candidates (with their originals, for the diffs)."""
        project, dataset = self.session.project, self.session.dataset
        if project is None or dataset is None:
            self.panel.set_candidates([])
            return
        self.panel.set_candidates(candidate_rows_with_originals(project, dataset.id))

    def candidate_changed(self, candidate_id: int) -> None:
        """Re-read one candidate after a decision (or its undo) and show it."""
        try:
            cand = load_candidate(self.session.project, candidate_id)
        except CounterbiasError:
            self.reload_candidates()
            return
        self.panel.update_candidate(with_originals(self.session.project, [cand])[0])

    # ------------------------------------------------------------------ decisions
    def run_write(self, fn: Any, *args: Any) -> Any:
        """Call ``fn(project, *args)``; a named error is shown, not raised (returns ``None``)."""
        try:
            return fn(self.session.project, *args)
        except CounterbiasError as exc:
            self.show_error(exc)
            return None

    def decide(self, decision: str) -> None:
        """``"accepted"`` / ``"rejected"`` the current candidate, or ``"edit"`` its text."""
        cand = self.panel.current_candidate()
        if cand is None or self.session.project is None:
            return
        if decision == "edit":
            self.edit_current()
            return
        if cand["status"] == "failed":
            self.status("A failed candidate has nothing to decide on: Generate again.")
            return
        if self.apply_decision(int(cand["id"]), decision) and self.panel.advance.isChecked():
            self.panel.advance_from(int(cand["id"]))

    def apply_decision(self, candidate_id: int, status: str, text: str | None = None) -> bool:
        """Record a decision and push it on the undo stack; return whether it was recorded."""
        before = self.run_write(set_decision, candidate_id, status, text)
        if before is None:
            return False
        self.undo_stack.push(DecisionCommand(self, candidate_id, status, text, before))
        self.candidate_changed(candidate_id)
        self.panel.table.setFocus()
        if text is not None:
            self.rejudge(candidate_id)
        return True

    def accept_passing(self) -> int:
        """Accept every undecided candidate of the shown dataset that the accept rule passes, as one undo step;
        return how many."""
        project, dataset = self.session.project, self.session.dataset
        if project is None or dataset is None:
            return 0
        ids = self.run_write(passing_ids, dataset.id) or []
        if not ids:
            self.status("No undecided candidate passes the accept rule.")
            return 0
        self.undo_stack.beginMacro(f"Accept {count_of(len(ids), 'passing candidate')}")
        done = 0
        for cid in ids:
            before = self.run_write(set_decision, cid, "accepted", None)
            if before is None:
                break
            self.undo_stack.push(DecisionCommand(self, cid, "accepted", None, before))
            done += 1
        self.undo_stack.endMacro()
        self.reload_candidates()
        self.status(f"Accepted {count_of(done, 'passing candidate')} (Edit ▸ Undo takes them back).")
        return done

    def edit_current(self) -> Any:
        """Open the editor on the current candidate; saving accepts it with the new text."""
        cand = self.panel.current_candidate()
        if cand is None:
            return None
        if cand["status"] == "failed":
            self.status("A failed candidate has no text to edit: Generate again.")
            return None
        dialog = self.panel.open_editor(cand)
        cid = int(cand["id"])
        dialog.accepted.connect(lambda: self.apply_decision(cid, "accepted", dialog.text()))
        return dialog

    def rejudge(self, candidate_id: int) -> Job | None:
        """Judge a candidate's (edited) text again with the members that judged it, as a job.

        One judge job per candidate at a time: a request while one runs (an undo right after an
        edit) makes it run once more when it ends, so the stored scores follow the newest text.
        """
        if candidate_id in self._judging:
            self._judging[candidate_id] = True
            return None
        project = self.session.project
        try:
            cand = load_candidate(project, candidate_id)
        except CounterbiasError:
            return None
        self._judging[candidate_id] = False

        def ended(*_args: Any) -> None:
            again = self._judging.pop(candidate_id, False)
            self.candidate_changed(candidate_id)
            if again:
                self.rejudge(candidate_id)

        # the members that judged it; none: the string checks alone run again on the new text
        return self.run_job(judge_candidates, project, [candidate_id], judged_by(cand), busy=False,
                            title=f"Judge edited candidate {candidate_id}", done=ended, failed=ended, cancelled=ended)
