"""The before/after report: what the counterbias augmentation changed, in one result object.

:func:`build_report` gathers, for one dataset version:

* the z-statistics of the original and of the augmented version (the originals plus the accepted
  candidates, or a stored ``augmented`` version) over the *same* features, and the Δz of every
  feature at the label it over-predicted before (which features lost or gained bias);
* the candidates per method and status (accepted / rejected / undecided / failed) and per
  reason (the checks a candidate fails, from ``candidates.scores``);
* the label-flip rates (LFR, SLFR) and the share keeping every spurious word, per method;
* the downstream evaluation stored in the project (:mod:`engine.evaluation.results_store`), and
  cheap diversity figures of the accepted edits (no embeddings, no training).

It reads stored results and computes only cheap things (one feature matrix, one pass over the
candidates), and writes nothing. :mod:`engine.evaluation.report_render` turns the
:class:`Report` into a self-contained HTML file or a PDF.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.evaluation.errors import NoParentsError, NothingToReportError, ReportError
from engine.evaluation.results_store import load_results
from engine.evaluation.table import TableRow, summarise
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.stats.config import StatsConfig
from engine.stats.project_io import DatasetTexts, features_of, load_dataset_texts
from engine.stats.zstats import ZStatsResult, compute_zstats
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.evaluation.diversity_report import DiversityReport
    from engine.store import DatasetInfo, Project

__all__ = [
    "DeltaRow",
    "FlipRow",
    "MethodCounts",
    "ReasonCounts",
    "Report",
    "SECTIONS",
    "build_report",
    "failing_checks",
]

#: The report's sections in order: ``(key, title)``; the key is the HTML anchor.
SECTIONS = (
    ("summary", "Summary"),
    ("competency", "Competency plot: original vs augmented"),
    ("delta-z", "Δz: features whose bias changed most"),
    ("candidates", "Candidates: accepted, rejected, undecided"),
    ("reasons", "Candidates per failing check"),
    ("flip-rates", "Label-flip rates"),
    ("downstream", "Downstream evaluation"),
    ("diversity", "Diversity of the accepted edits"),
)

#: Reason of a candidate that fails no check, and of one that was never verified.
ALL_PASS = "(all checks pass)"
NOT_VERIFIED = "(not verified)"

#: Verdict statuses that count as a failed check (compared lower-case).
_FAIL_STATUSES = {"fail", "failed", "failure", "reject", "rejected", "error", "no", "false"}


@dataclass(frozen=True)
class DeltaRow:
    """How one feature's bias changed, at the label it over-predicted in the original.

    Attributes
    ----------
    feature, kind, label
        The feature, its family and the label with its highest z in the original.
    n_before, n_after
        Occurrences in the original and in the augmented version.
    z_before, z_after, delta_z
        z for that label before and after, and ``z_after − z_before``.
    abs_change
        ``|z_after| − |z_before|`` (negative: the bias shrank).
    significant_before, significant_after
        Above the Bonferroni threshold of each version.
    feature_index
        The feature's position in both statistics.
    """

    feature: str
    kind: str
    label: str
    n_before: int
    n_after: int
    z_before: float
    z_after: float
    delta_z: float
    abs_change: float
    significant_before: bool
    significant_after: bool
    feature_index: int = -1


@dataclass(frozen=True)
class MethodCounts:
    """Candidates of one generation method by review status.

    ``undecided`` are the proposed ones; ``failed`` are slots whose generation failed (no text);
    ``passing`` are those failing no check.
    """

    method: str
    total: int
    accepted: int
    rejected: int
    undecided: int
    failed: int
    passing: int


@dataclass(frozen=True)
class ReasonCounts:
    """Candidates failing one check (a candidate failing two checks counts in both rows)."""

    reason: str
    candidates: int
    accepted: int
    rejected: int
    undecided: int


@dataclass(frozen=True)
class FlipRow:
    """Label-flip rates of the judged candidates of one method (or of a group such as *accepted*).

    Attributes
    ----------
    lfr
        Share the ensemble labels with the target label.
    slfr
        Share the ensemble no longer labels with the original label (soft LFR).
    spurious_kept
        Share keeping every spurious word of the original.
    """

    group: str
    judged: int
    lfr: float
    slfr: float
    spurious_kept: float


@dataclass(frozen=True, eq=False)
class Report:
    """Everything the before/after report shows (see the module doc).

    Attributes
    ----------
    dataset
        The original dataset version.
    augmented
        What the augmented side is: ``"originals + N accepted candidates"`` or a stored version's name.
    n_original, n_added
        Rows of the original and rows added by the augmentation.
    before, after
        z-statistics of the original and the augmented version over the same features.
    delta
        One :class:`DeltaRow` per feature tested in the original, by ``abs_change`` (largest drop first).
    methods, reasons, flips
        Candidate counts per method and per failing check; flip rates per method.
    downstream
        The stored evaluation summarised over seeds (empty when nothing is stored).
    diversity
        Diversity of the accepted edits against their originals (``None`` for fewer than two).
    config
        The statistics settings.
    notes
        Sentences the report adds (what was skipped and why).
    created_at
        When it was built.
    """

    dataset: DatasetInfo
    augmented: str
    n_original: int
    n_added: int
    before: ZStatsResult
    after: ZStatsResult
    delta: tuple[DeltaRow, ...]
    methods: tuple[MethodCounts, ...]
    reasons: tuple[ReasonCounts, ...]
    flips: tuple[FlipRow, ...]
    downstream: tuple[TableRow, ...]
    diversity: DiversityReport | None
    config: StatsConfig
    notes: tuple[str, ...] = ()
    created_at: str = field(default_factory=now)

    @property
    def title(self) -> str:
        return f"Before/after report — {self.dataset.name}"

    def dropped(self, k: int = 15) -> list[DeltaRow]:
        """The ``k`` features whose |z| dropped most (only real drops)."""
        return [r for r in self.delta[:k] if r.abs_change < 0]

    def rose(self, k: int = 15) -> list[DeltaRow]:
        """The ``k`` features whose |z| rose most (only real rises)."""
        return [r for r in reversed(self.delta[-k:]) if r.abs_change > 0]

    def biased(self, k: int = 15) -> list[DeltaRow]:
        """The ``k`` features significant in the original with the highest z, and what became of them."""
        rows = [r for r in self.delta if r.significant_before]
        return sorted(rows, key=lambda r: (-r.z_before, r.feature_index))[:k]

    def delta_of(self, feature: str) -> DeltaRow | None:
        """The row of one feature (``None`` when it was not tested in the original)."""
        return next((r for r in self.delta if r.feature == feature), None)

    def significant_counts(self) -> tuple[int, int]:
        """Features significant for some label in the original and in the augmented version."""
        return (int(self.before.significant_mask.any(axis=1).sum()),
                int(self.after.significant_mask.any(axis=1).sum()))

    def change_counts(self) -> dict[str, int]:
        """How many tested features' |z| dropped, rose or stayed (within 1e-9)."""
        changes = np.array([r.abs_change for r in self.delta], float)
        return {"dropped": int((changes < -1e-9).sum()), "rose": int((changes > 1e-9).sum()),
                "unchanged": int((np.abs(changes) <= 1e-9).sum())}

    def totals(self) -> MethodCounts:
        """The candidate counts over every method."""
        rows = self.methods
        return MethodCounts("all methods", *(sum(getattr(r, f) for r in rows) for f in
                                             ("total", "accepted", "rejected", "undecided", "failed", "passing")))

    def summary(self) -> dict[str, Any]:
        """JSON-ready headline figures (what the CLI prints)."""
        sig_before, sig_after = self.significant_counts()
        totals = self.totals()

        def num(x: float) -> float | None:
            return None if isinstance(x, float) and math.isnan(x) else round(float(x), 4)

        return {
            "dataset": self.dataset.name,
            "augmented": self.augmented,
            "original_rows": self.n_original,
            "added_rows": self.n_added,
            "significant_features": {"before": sig_before, "after": sig_after},
            "z_threshold": {"before": num(self.before.z_threshold), "after": num(self.after.z_threshold)},
            "abs_z": self.change_counts(),
            "candidates": {"total": totals.total, "accepted": totals.accepted, "rejected": totals.rejected,
                           "undecided": totals.undecided, "failed": totals.failed},
            "flip_rates": {f.group: {"judged": f.judged, "lfr": num(f.lfr), "slfr": num(f.slfr)} for f in self.flips},
            "downstream_rows": len(self.downstream),
            "diversity": None if self.diversity is None else {
                k: num(v) if isinstance(v, float) else v for k, v in self.diversity.as_dict().items()},
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------- reasons


def _is_failure(verdict: Any) -> bool:
    if isinstance(verdict, Mapping):
        if isinstance(verdict.get("passed"), bool):
            return not verdict["passed"]
        verdict = verdict.get("status", verdict.get("verdict"))
    if isinstance(verdict, bool):
        return not verdict
    return str(verdict).strip().lower() in _FAIL_STATUSES


def failing_checks(scores: Mapping[str, Any] | None) -> list[str] | None:
    """Names of the checks a candidate fails, from its stored ``scores``.

    Named verdicts (``scores["verdicts"]``: ``{name: {"status": ..., "reason": ...}}``) are
    used when present; a status of ``fail`` / ``failed`` / ``reject`` (or ``passed: false``)
    fails. Otherwise the ensemble judge's fields stand in: ``label_flip`` (the ensemble does not
    predict the target), ``spurious_kept`` (a spurious word was lost) and ``filter`` (the
    candidate fails the filter for another reason, e.g. the target probability).

    Returns
    -------
    list of str or None
        Failing check names (empty: every check passes); ``None`` when the candidate was never
        verified.

    Examples
    --------
    >>> failing_checks({"verdicts": {"fluency": {"status": "pass"}, "leak": {"status": "fail", "reason": "x"}}})
    ['leak']
    >>> failing_checks({"judge": {"flipped": False}, "spurious_kept": True, "passes": False})
    ['label_flip']
    >>> failing_checks({}) is None
    True
    """
    if not scores:
        return None
    verdicts = scores.get("verdicts")
    if isinstance(verdicts, Mapping) and verdicts:
        return [str(name) for name, v in verdicts.items() if _is_failure(v)]
    judge = scores.get("judge")
    if not isinstance(judge, Mapping) and "spurious_kept" not in scores and "passes" not in scores:
        return None
    out = []
    if isinstance(judge, Mapping) and not judge.get("flipped", True):
        out.append("label_flip")
    if scores.get("spurious_kept") is False:
        out.append("spurious_kept")
    if scores.get("passes") is False and not out:
        out.append("filter")
    return out


_UNDECIDED = "proposed"


def _count_methods(candidates: Sequence[Mapping[str, Any]]) -> tuple[MethodCounts, ...]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in candidates:
        groups.setdefault(str(c.get("method") or "?"), []).append(c)
    out = []
    for method in sorted(groups):
        rows = groups[method]
        status = Counter(r.get("status") for r in rows)
        passing = sum(1 for r in rows if r.get("status") != "failed" and failing_checks(r.get("scores")) == [])
        out.append(MethodCounts(method, len(rows), status["accepted"], status["rejected"], status[_UNDECIDED],
                                status["failed"], passing))
    return tuple(out)


def _count_reasons(candidates: Sequence[Mapping[str, Any]]) -> tuple[ReasonCounts, ...]:
    counts: dict[str, Counter] = {}
    for c in candidates:
        if c.get("status") == "failed":
            continue
        failing = failing_checks(c.get("scores"))
        names = [NOT_VERIFIED] if failing is None else (failing or [ALL_PASS])
        for name in names:
            counts.setdefault(name, Counter())[c.get("status")] += 1
    special = {ALL_PASS: 1, NOT_VERIFIED: 2}
    order = sorted(counts, key=lambda name: (special.get(name, 0), -sum(counts[name].values()), name))
    return tuple(ReasonCounts(name, sum(counts[name].values()), counts[name]["accepted"], counts[name]["rejected"],
                              counts[name][_UNDECIDED]) for name in order)


def _flip_rows(candidates: Sequence[Mapping[str, Any]]) -> tuple[FlipRow, ...]:
    from engine.counterbias.verify import flip_rates

    def row(group: str, chosen: Sequence[Mapping[str, Any]]) -> FlipRow | None:
        scores = [c.get("scores") or {} for c in chosen if c.get("status") != "failed"]
        rates = flip_rates([s for s in scores if isinstance(s.get("judge"), Mapping)])
        if not rates["n"]:
            return None
        return FlipRow(group, int(rates["n"]), rates["lfr"], rates["slfr"], rates["spurious_kept"])

    methods = sorted({str(c.get("method") or "?") for c in candidates})
    rows = [row(m, [c for c in candidates if str(c.get("method") or "?") == m]) for m in methods]
    if len(methods) > 1:
        rows.append(row("all methods", candidates))
    rows.append(row("accepted only", [c for c in candidates if c.get("status") == "accepted"]))
    return tuple(r for r in rows if r is not None)


# ---------------------------------------------------------------------------- statistics


def _extra_from_candidates(data: DatasetTexts, accepted: Sequence[Mapping[str, Any]]) -> tuple[list[dict], int]:
    """Rows (text fields + label id) of accepted candidates; and how many were skipped (unknown label)."""
    labels = {label: i for i, label in enumerate(data.labels)}
    rows, skipped = [], 0
    for c in accepted:
        if c.get("target_label") not in labels:
            skipped += 1
            continue
        rows.append({"y": labels[c["target_label"]], "text": c.get("text"), "premise": c.get("premise"),
                     "hypothesis": c.get("hypothesis")})
    return rows, skipped


def _extra_from_version(project: Project, data: DatasetTexts, augmented_id: int,
                        cancel: CancelToken) -> list[dict]:
    """Rows of a stored augmented version that are not in the original."""
    version = load_dataset_texts(project, augmented_id, cancel=cancel)
    if version.task != data.task or set(version.labels) - set(data.labels):
        raise ReportError(f"{version.dataset.name!r} is not a version of {data.dataset.name!r} (its task or labels "
                          "differ).", "Choose an augmented version built from this dataset.")
    known = set(data.example_ids.tolist())
    label_id = {label: i for i, label in enumerate(data.labels)}
    rows = []
    for k, eid in enumerate(version.example_ids.tolist()):
        if eid in known:
            continue
        row = {"y": label_id[version.labels[int(version.y[k])]]}
        if version.task == "pair":
            row.update(premise=version.premises[k], hypothesis=version.hypotheses[k])
        else:
            row.update(text=version.texts[k])
        rows.append(row)
    return rows


def _with_rows(data: DatasetTexts, extra: Sequence[Mapping[str, Any]]) -> DatasetTexts:
    """``data`` followed by ``extra`` rows (example id -1: they are not stored examples)."""
    ids = np.concatenate([data.example_ids, np.full(len(extra), -1, np.int64)])
    y = np.concatenate([data.y, np.array([r["y"] for r in extra], np.int64)])
    if data.task == "pair":
        return DatasetTexts(data.dataset, ids, y, premises=data.premises + [r.get("premise") or "" for r in extra],
                            hypotheses=data.hypotheses + [r.get("hypothesis") or "" for r in extra])
    return DatasetTexts(data.dataset, ids, y, texts=data.texts + [r.get("text") or "" for r in extra])


def _delta_rows(before: ZStatsResult, after: ZStatsResult) -> tuple[DeltaRow, ...]:
    """One row per feature tested in ``before`` (same features in both), largest |z| drop first."""
    rows = np.flatnonzero(before.tested)
    if not len(rows):
        return ()
    zb = before.z[rows]
    j = np.argmax(np.where(np.isnan(zb), -np.inf, zb), axis=1)
    z_before = zb[np.arange(len(rows)), j]
    z_after = after.z[rows, j]
    change = np.abs(z_after) - np.abs(z_before)
    sig_b = before.significant_mask[rows, j]
    sig_a = after.significant_mask[rows, j]
    order = np.lexsort((rows, np.where(np.isnan(change), np.inf, change)))
    out = []
    for k in order.tolist():
        i = int(rows[k])
        out.append(DeltaRow(
            feature=str(before.feature_names[i]), kind=str(before.kinds[i]), label=before.labels[int(j[k])],
            n_before=int(before.n[i]), n_after=int(after.n[i]), z_before=float(z_before[k]),
            z_after=float(z_after[k]), delta_z=float(z_after[k] - z_before[k]), abs_change=float(change[k]),
            significant_before=bool(sig_b[k]), significant_after=bool(sig_a[k]), feature_index=i,
        ))
    return tuple(out)


# ---------------------------------------------------------------------------- diversity


def _diversity(project: Project, accepted: Sequence[Mapping[str, Any]], progress: ProgressFn,
               cancel: CancelToken) -> DiversityReport | None:
    from engine.counterbias.review import edited_field
    from engine.evaluation.diversity_report import pair_diversity

    parents = {r["id"]: r for r in project.examples(sorted({int(c["example_id"]) for c in accepted}))}
    edits, originals = [], []
    for c in accepted:
        parent = parents.get(int(c["example_id"]))
        name = edited_field(c)
        if parent is None or c.get(name) is None:
            continue
        edits.append(c.get(name) or "")
        originals.append(parent.get(name) or "")
    try:
        return pair_diversity(edits, originals, embeddings=False, max_bleu_texts=1000, progress=progress,
                              cancel=cancel)
    except NoParentsError:
        return None


# ---------------------------------------------------------------------------- entry point


def has_candidates(project: Project, dataset_id: int) -> bool:
    """Whether a dataset (or the original an augmented version was built from) has any candidate: without one
    and without an augmented version there is nothing to report (one indexed query, safe on the GUI thread)."""
    dataset = project.dataset(dataset_id)
    ids = [dataset.id] + ([dataset.parent_id] if dataset.kind == "augmented" and dataset.parent_id else [])
    row = project.db.execute(
        "SELECT 1 FROM candidates WHERE example_id IN (SELECT example_id FROM dataset_members WHERE dataset_id IN "
        f"({','.join('?' * len(ids))})) LIMIT 1", ids).fetchone()
    return row is not None


def build_report(
    project: Project,
    dataset_id: int | str,
    *,
    augmented_id: int | str | None = None,
    config: StatsConfig | None = None,
    diversity: bool = True,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> Report:
    """Build the before/after report of a dataset version and its counterbias augmentation.

    Parameters
    ----------
    project
        The open project (only read).
    dataset_id
        The original dataset version (id or name). An ``augmented`` version may be given too:
        its parent is then the original and the version itself the augmented side.
    augmented_id
        A stored augmented version to compare with (default: the originals plus the candidates
        accepted now, computed in memory).
    config
        Feature families and z-statistics settings (default :class:`StatsConfig`).
    diversity
        Measure the accepted edits' diversity (self-BLEU, distinct-n, edit distance; no
        embeddings).
    progress, cancel
        Progress callback and cancel token.

    Raises
    ------
    NothingToReportError
        When the dataset has no candidates and no augmented version is given.
    ReportError
        When the augmented version is not a version of the dataset.
    DatasetNotFoundError
        For an unknown dataset.
    """
    from engine.counterbias.review import candidate_rows

    token = ensure_token(cancel)
    config = config or StatsConfig()
    notes: list[str] = []
    dataset = project.dataset(dataset_id)
    augmented_info = project.dataset(augmented_id) if augmented_id is not None else None
    if augmented_info is None and dataset.kind == "augmented" and dataset.parent_id is not None:
        augmented_info, dataset = dataset, project.dataset(dataset.parent_id)
    if augmented_info is not None and augmented_info.id == dataset.id:
        raise ReportError(f"{dataset.name!r} cannot be compared with itself.",
                          "Choose the original dataset and its augmented version.")

    progress(0.0, "reading the candidates")
    candidates = candidate_rows(project, dataset_id=dataset.id)
    accepted = [c for c in candidates if c.get("status") == "accepted"]
    if not candidates and augmented_info is None:
        raise NothingToReportError(
            f"Dataset {dataset.name!r} has no counterbias candidates, so there is nothing to compare.",
            "Generate candidates in the Counterbias tab (or 'counterbias generate'), review them, then build the "
            "report; or pass an augmented version to compare with.")
    token.raise_if_cancelled()

    data = load_dataset_texts(project, dataset.id, progress=scaled(progress, 0.02, 0.15), cancel=token)
    if augmented_info is None:
        extra, skipped = _extra_from_candidates(data, accepted)
        if skipped:
            notes.append(f"{skipped} accepted candidate(s) target a label outside the dataset's label set and are "
                         "left out.")
        augmented = f"originals + {len(extra):,} accepted candidates"
        if not extra:
            notes.append("No candidate is accepted yet: the augmented version equals the original.")
    else:
        extra = _extra_from_version(project, data, augmented_info.id, token)
        augmented = f"{augmented_info.name} (stored version, {len(extra):,} added rows)"
    combined = _with_rows(data, extra)
    token.raise_if_cancelled()

    features = features_of(combined, config.features, progress=scaled(progress, 0.15, 0.55), cancel=token)
    n = len(data)
    before = compute_zstats(features.rows(slice(0, n)), data.y, data.labels, config.zstats, cancel=token)
    progress(0.6, "z-statistics of the original")
    after = compute_zstats(features, combined.y, data.labels, config.zstats, cancel=token)
    progress(0.7, "z-statistics of the augmented version")
    delta = _delta_rows(before, after)

    methods = _count_methods(candidates)
    reasons = _count_reasons(candidates)
    flips = _flip_rows(candidates)
    if candidates and not flips:
        notes.append("No candidate has been judged by the ensemble yet: there are no flip rates.")
    progress(0.75, "candidates counted")

    stored = load_results(project)
    downstream = tuple(summarise(stored))
    if not downstream:
        notes.append("No downstream evaluation is stored in the project (run 'counterbias evaluate').")
    token.raise_if_cancelled()

    measured = None
    if diversity and len(accepted) >= 2:
        measured = _diversity(project, accepted, scaled(progress, 0.8, 0.98), token)
    elif diversity:
        notes.append("Diversity needs at least two accepted candidates.")
    progress(1.0, "report ready")
    return Report(dataset=dataset, augmented=augmented, n_original=n, n_added=len(extra), before=before,
                  after=after, delta=delta, methods=methods, reasons=reasons, flips=flips, downstream=downstream,
                  diversity=measured, config=config, notes=tuple(notes))
