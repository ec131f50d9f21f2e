"""Drives the Annotate tab (:class:`~widgets.annotation_panel.AnnotationPanel`): the variation-theory loop.

*Next batch* asks the selection strategy for examples (a job: the cluster strategy embeds the
pool); a label given to an example is stored at once (one small write), then its
counterfactuals are made in the background (a job per labelled example, queued behind each
other, with the LLM of the stored LLM settings) and the learner retrains (a job that a newer
retraining replaces). Accepting, fixing or rejecting a counterfactual is stored at once and
retrains too. Everything the engine stores survives a restart: opening the tab again restores
the labelled examples and the learning curve (:func:`engine.active.annotation.load_session`).
"""

from __future__ import annotations

from typing import Any

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.active.annotation import (
    AnnotationSetup,
    SessionState,
    annotate,
    annotation_setup,
    learning_curve,
    load_session,
    make_counterfactuals,
    next_batch,
    remove_annotation,
    retrain,
)
from engine.errors import CounterbiasError
from engine.progress import CancelToken, ProgressFn
from engine.store import DatasetInfo, Project
from widgets.annotation_panel import AnnotationPanel
from widgets.llm_dialog import FIELDS, config_from_values
from widgets.wording import count_of

__all__ = ["AnnotationController"]


def _choose(project: Project, dataset_id: int, strategy: str, n: int, *, progress: ProgressFn,
            cancel: CancelToken) -> tuple[AnnotationSetup, list[int]]:
    setup = annotation_setup(project, dataset_id)
    return setup, next_batch(project, setup, strategy=strategy, n=n, progress=progress, cancel=cancel)


def _retrain(project: Project, dataset_id: int, setup: AnnotationSetup | None, learner: str, *, progress: ProgressFn,
             cancel: CancelToken) -> tuple[AnnotationSetup, list[Any]]:
    """Retrain (the split is computed here, off the GUI thread, when not known yet); the setup and the curve."""
    setup = setup or annotation_setup(project, dataset_id)
    retrain(project, setup, learner=learner, progress=progress, cancel=cancel)
    return setup, learning_curve(project, setup, learner=learner)


class AnnotationController(PanelController):
    """Queue, labels, counterfactuals and retraining of the session's dataset."""

    panel: AnnotationPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: AnnotationPanel, *, learner: str = "embed-lr") -> None:
        super().__init__(session, jobs, panel)
        self.learner = learner
        self.setup: AnnotationSetup | None = None
        #: Example ids in the queue, in order; labels given (example id -> label); counterfactual labels.
        self.queue: list[int] = []
        self.labels: dict[int, str] = {}
        self.cf_labels: dict[int, str] = {}
        self.strategy_of: dict[int, str] = {}
        self.current: int | None = None
        self._loaded_for: int | None = None
        panel.nextBatchRequested.connect(self.next_batch)
        panel.labelGiven.connect(self.give_label)
        panel.exampleChosen.connect(self.show_example)
        panel.counterfactualDecided.connect(self.decide)
        panel.makeCounterfactuals.connect(lambda: self.make_counterfactuals(None))
        panel.retrainRequested.connect(self.retrain)
        session.datasetChanged.connect(self.dataset_changed)

    # ------------------------------------------------------------------ session
    def dataset_changed(self, dataset: DatasetInfo | None) -> None:
        self.setup, self.queue, self.labels, self.cf_labels, self.current = None, [], {}, {}, None
        self._loaded_for = None
        self.panel.set_labels(dataset.labels if dataset is not None else [])
        self.panel.set_queue([])
        self.panel.show_example(None, "", None, None)
        self.panel.show_counterfactuals([], {})
        self.panel.show_curve([])
        if dataset is None:
            self.panel.set_status("Open a dataset to annotate it.")
        elif self.is_shown():
            self.load()

    def panel_shown(self) -> None:
        dataset = self.session.dataset
        if dataset is not None and self._loaded_for != dataset.id:
            self.load()

    def load(self) -> Job | None:
        """Restore the stored session of the current dataset (labels, curve) as a job."""
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return None
        self._loaded_for = dataset.id
        job = self.jobs.start(load_session, project, dataset.id, learner=self.learner, kind="annotate-load",
                              when_busy="cancel", title=f"Annotation session of {dataset.name}", report_errors=False)

        def done(state: SessionState) -> None:
            if self.session.dataset is None or self.session.dataset.id != dataset.id:
                return
            self.setup = state.setup
            for a in state.annotations:
                if a.candidate_id is None:
                    self.labels[a.example_id] = a.label
                    self.strategy_of[a.example_id] = a.strategy or ""
                    if a.example_id not in self.queue:
                        self.queue.append(a.example_id)
                else:
                    self.cf_labels[int(a.candidate_id)] = a.label
            self._show_queue()
            self.panel.show_curve(state.curve)
            self.panel.set_status(f"{count_of(len(self.labels), 'example')} labelled; {len(state.setup.test_ids)} held out for "
                                  f"the learning curve. Press Next batch to choose examples.")

        job.on_finished(done)
        job.on_failed(lambda exc, tb: self.panel.set_status(str(exc)))
        return job

    # ------------------------------------------------------------------ queue
    def next_batch(self, strategy: str, n: int) -> Job | None:
        """Choose the next ``n`` examples with ``strategy`` (a job)."""
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return None
        self.panel.set_status(f"Choosing {count_of(n, 'example')} ({strategy})…")
        job = self.jobs.start(_choose, project, dataset.id, strategy, n, kind="annotate-choose",
                              title=f"Choose {count_of(n, 'example')} of {dataset.name} ({strategy})", report_errors=False)

        def done(result: tuple[AnnotationSetup, list[int]]) -> None:
            self.setup, ids = result
            for i in ids:
                if i not in self.queue:
                    self.queue.append(i)
                    self.strategy_of[i] = strategy
            self._show_queue(select=ids[0] if ids else None)
            self.panel.set_status(f"{count_of(len(ids), 'example')} to label ({strategy}); keys 1–9 give the labels."
                                  if ids else "Every example of the pool is labelled.")

        job.on_finished(done)
        job.on_failed(self._failed("Could not choose examples"))
        return job

    def _show_queue(self, select: int | None = None) -> None:
        project = self.session.project
        if project is None:
            return
        texts = {int(r["id"]): str(r.get("text") or r.get("hypothesis") or "") for r in project.examples(self.queue)}
        self.panel.set_queue([(i, texts.get(i, ""), self.labels.get(i)) for i in self.queue],
                             current=select if select is not None else self.current)
        if select is not None:
            self.show_example(select)

    def show_example(self, example_id: int) -> None:
        """Show an example of the queue with its counterfactuals."""
        project = self.session.project
        if project is None:
            return
        rows = project.examples([example_id])
        if not rows:
            return
        row = rows[0]
        self.current = example_id
        if self.session.example_id != example_id:
            self.session.set_example(dict(row))  # the Example pane follows
        fields = self.session.dataset.text_fields if self.session.dataset else ("text",)
        text = "\n\n".join(f"{f}: {row.get(f) or ''}" if len(fields) > 1 else str(row.get(f) or "") for f in fields)
        given = self.labels.get(example_id)
        self.panel.show_example(example_id, text, str(row["label"]) if given else None, given)
        self.refresh_counterfactuals()

    def refresh_counterfactuals(self) -> None:
        from engine.counterbias import candidate_rows

        project = self.session.project
        if project is None or self.current is None:
            return
        rows = [r for r in candidate_rows(project, example_ids=[self.current]) if r["method"] in ("vt", "llm")]
        self.panel.show_counterfactuals(rows, self.cf_labels)

    # ------------------------------------------------------------------ labels
    def give_label(self, example_id: int, label: str) -> None:
        """Store the analyst's label; move on; make its counterfactuals and retrain in the background."""
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return
        try:
            annotate(project, dataset.id, example_id, label, strategy=self.strategy_of.get(example_id))
        except CounterbiasError as exc:
            self.show_error(exc)
            return
        self.labels[example_id] = label
        if example_id not in self.queue:
            self.queue.append(example_id)
        left = sum(1 for i in self.queue if i not in self.labels)
        self.panel.set_status(f"{count_of(len(self.labels), 'example')} labelled; {left} left in the queue"
                              + ("" if left else ": press Next batch for more") + ".")
        following = [i for i in self.queue[self.queue.index(example_id) + 1:] if i not in self.labels]
        self._show_queue(select=following[0] if following else example_id)
        if self.panel.counterfactual_method() != "none":
            self.make_counterfactuals([example_id])
        self.retrain()

    def decide(self, example_id: int, candidate_id: int, label: str) -> None:
        """Label a counterfactual (``""``: reject it) and retrain."""
        from engine.counterbias.review import set_decision

        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return
        try:
            if label:
                annotate(project, dataset.id, example_id, label, candidate_id=candidate_id)
                set_decision(project, candidate_id, "accepted")
                self.cf_labels[candidate_id] = label
            else:
                remove_annotation(project, dataset.id, example_id, candidate_id)
                set_decision(project, candidate_id, "rejected")
                self.cf_labels.pop(candidate_id, None)
        except CounterbiasError as exc:
            self.show_error(exc)
            return
        self.refresh_counterfactuals()
        self.retrain()

    def make_counterfactuals(self, example_ids: list[int] | None) -> Job | None:
        """Counterfactuals of ``example_ids`` (``None``: every labelled example), a job behind the others."""
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None:
            return None
        ids = list(example_ids) if example_ids is not None else [i for i in self.queue if i in self.labels]
        method = self.panel.counterfactual_method()
        if not ids or method == "none":
            return None
        try:
            config = config_from_values({key: self.session.settings.get(f"llm_{key}") for key in FIELDS})
        except CounterbiasError as exc:
            self.show_error(exc)
            return None
        job = self.jobs.start(make_counterfactuals, project, dataset.id, ids, config, method=method,
                              kind="annotate-counterfactuals", report_errors=False,
                              title=f"Counterfactuals of {len(ids)} labelled example(s) ({method})")

        def done(result: dict[str, Any]) -> None:
            made = len(result["vt"]) + len(result["llm"])
            self.status(f"{made} counterfactual(s) made, {result['failed']} failed", 6000)
            if self.current in ids:
                self.refresh_counterfactuals()

        job.on_finished(done)
        job.on_failed(self._failed("Counterfactuals failed"))
        return job

    def _failed(self, what: str) -> Any:
        """A job's failure handler: the reason in the status line, a named error also in a dialog."""
        def failed(exc: BaseException, tb: str) -> None:
            self.panel.set_status(f"{what}: {exc}")
            if isinstance(exc, CounterbiasError):
                self.show_error(exc)
        return failed

    # ------------------------------------------------------------------ learner
    def retrain(self) -> Job | None:
        """Retrain the learner on every label (a newer retraining replaces a running one)."""
        dataset, project = self.session.dataset, self.session.project
        if dataset is None or project is None or not self.labels:
            return None
        job = self.jobs.start(_retrain, project, dataset.id, self.setup, self.learner, kind="annotate-retrain",
                              when_busy="cancel", title=f"Retrain on {len(self.labels)} labels of {dataset.name}",
                              report_errors=False)

        def done(result: tuple[AnnotationSetup, list[Any]]) -> None:
            if self.session.project is project:
                self.setup = result[0]
                self.panel.show_curve(result[1])

        job.on_finished(done)
        job.on_failed(lambda exc, tb: self.panel.set_status(f"Retraining failed: {exc}"))
        return job
