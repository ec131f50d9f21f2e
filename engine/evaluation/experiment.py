"""The downstream experiment: train a classifier per condition and seed, score every test set.

Each finished (condition, classifier, seed, test set) is stored as soon as it is scored, so a
cancelled or killed run resumes where it stopped: a rerun skips the cells already stored (and
trains nothing for a (condition, seed) whose test sets are all scored).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.evaluation.classifiers import Classifier, classifier_key
from engine.evaluation.conditions import Condition, resolve_condition
from engine.evaluation.errors import EvaluationError, NoTestSetsError
from engine.evaluation.results_store import CellResult, finished_keys, load_results, store_result
from engine.evaluation.table import TableRow, summarise
from engine.evaluation.test_sets import TestSet, test_rows, test_sets
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store.runs import recorded_run

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["EvaluationResult", "run_evaluation", "score"]


@dataclass(frozen=True)
class EvaluationResult:
    """What a run produced and found stored.

    Attributes
    ----------
    cells
        Every result of the requested conditions × classifier × seeds × test sets.
    computed, skipped
        Cells scored by this call, and cells found already stored.
    run_id
        The ``runs`` row of this call.
    """

    cells: tuple[CellResult, ...]
    computed: int
    skipped: int
    run_id: int | None = None

    def table(self, level: float = 0.95) -> list[TableRow]:
        """Mean ± CI over seeds per condition × classifier × test set."""
        return summarise(self.cells, level)


def score(predicted: Sequence[str], gold: Sequence[str]) -> tuple[float, float]:
    """Accuracy and macro-F1 (over the gold labels) of label predictions.

    Examples
    --------
    >>> score(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    (0.75, 0.7333333333333334)
    """
    if not gold:
        return float("nan"), float("nan")
    accuracy = sum(p == g for p, g in zip(predicted, gold)) / len(gold)
    f1s = []
    for label in sorted(set(gold)):
        tp = sum(p == label and g == label for p, g in zip(predicted, gold))
        fp = sum(p == label and g != label for p, g in zip(predicted, gold))
        fn = sum(p != label and g == label for p, g in zip(predicted, gold))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return accuracy, sum(f1s) / len(f1s)


def run_evaluation(
    project: Project,
    conditions: Sequence[Condition],
    classifier: Classifier,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    tests: Sequence[TestSet] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> EvaluationResult:
    """Train ``classifier`` on each condition for each seed and score it on each test set.

    Parameters
    ----------
    project
        The open project; results are written to it as they are produced.
    conditions
        The training sets (:mod:`engine.evaluation.conditions`).
    classifier
        From :func:`engine.evaluation.classifiers.make_classifier`.
    seeds
        One trained classifier per seed (default three).
    tests
        The test sets (default: every one marked in the project).
    progress, cancel
        Progress callback and cancel token (checked between cells and inside training).

    Raises
    ------
    NoTestSetsError
        When nothing is marked as a test set.
    EvaluationError
        For repeated condition names or no seeds.
    """
    cancel = ensure_token(cancel)
    tests = list(tests) if tests is not None else test_sets(project)
    if not tests:
        raise NoTestSetsError("No dataset is marked as a test set.",
                              "Mark one with --test DATASET[:SPLIT][=ROLE] (roles: in-domain, counterfactual, "
                              "out-of-domain).")
    names = [c.name for c in conditions]
    if not conditions or len(set(names)) != len(names):
        raise EvaluationError(f"Conditions must be given and named uniquely (got {names}).", "Rename the repeats.")
    if not seeds:
        raise EvaluationError("No seeds given.", "Use at least one seed (default: three).")
    ckey = classifier_key(classifier)
    test_keys = {t.name: t.key(project) for t in tests}
    gold_cache: dict[str, list[dict]] = {}
    jobs = [(c, s) for c in conditions for s in seeds]
    computed = skipped = 0
    params = {"conditions": [{"name": c.name, "sources": [s.to_dict() for s in c.sources]} for c in conditions],
              "classifier": classifier.label, "classifier_params": classifier.params(), "seeds": list(seeds),
              "tests": [t.name for t in tests]}
    with recorded_run(project, "evaluate", None, params) as run:
        for j, (condition, seed) in enumerate(jobs):
            cancel.raise_if_cancelled()
            part = scaled(progress, j / len(jobs), (j + 1) / len(jobs))
            cond_key = condition.key(project)
            done = finished_keys(project, cond_key, ckey, seed)
            todo = [t for t in tests if test_keys[t.name] not in done]
            skipped += len(tests) - len(todo)
            if not todo:
                part(1.0, f"{condition.name}, seed {seed}: already evaluated")
                continue
            rows = resolve_condition(project, condition, seed)
            part(0.0, f"{condition.name}, seed {seed}: training {classifier.label} on {len(rows.texts):,} rows")
            fitted = classifier.fit(project, rows, seed, tag=cond_key, progress=scaled(part, 0.0, 0.8), cancel=cancel)
            for k, test in enumerate(todo):
                cancel.raise_if_cancelled()
                examples = gold_cache.get(test.name)
                if examples is None:
                    examples = gold_cache[test.name] = test_rows(project, test)
                texts = [tuple(r.get(f) or "" for f in rows.fields) for r in examples]
                predicted = fitted.predict(texts)
                accuracy, f1 = score(predicted, [r["label"] for r in examples])
                cell = CellResult(condition.name, cond_key, classifier.label, ckey, seed, test.name,
                                  test_keys[test.name], test.role, accuracy, f1, len(examples), len(rows.texts),
                                  tuple(condition.spec(project)), classifier.params())
                store_result(project, cell, run.id)
                computed += 1
                part(0.8 + 0.2 * (k + 1) / len(todo), f"{condition.name}, seed {seed}: {test.name} {accuracy:.3f}")
        run.result = {"computed": computed, "skipped": skipped}
    wanted_conditions = {c.name: c.key(project) for c in conditions}
    cells = tuple(
        c for c in load_results(project)
        if c.classifier_key == ckey and c.seed in set(seeds) and wanted_conditions.get(c.condition) == c.condition_key
        and c.test_key in set(test_keys.values())
    )
    progress(1.0, f"evaluated: {computed} new, {skipped} already stored")
    return EvaluationResult(cells, computed, skipped, run.id)
