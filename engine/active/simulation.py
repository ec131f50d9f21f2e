"""The paper's active-learning experiment, headless: strategies × seeds × budgets, macro-F1 on a held-out split.

The dataset is split once into an unlabelled *pool* and a held-out *test* split (a named split,
or a stratified sample of ``test_fraction`` drawn with ``split_seed``; the same for every seed
and strategy). For each strategy and seed the strategy orders the pool (:mod:`engine.active.strategies`);
at each budget of ``shots`` the learner is retrained from scratch on the first ``shots`` examples
with their gold labels (the simulated analyst), plus whatever the strategy adds (the
counterfactual strategy: each selected example's counterfactuals, labelled with their target
label), and scored on the test split (macro-F1 over the gold labels, and accuracy).

Each finished (strategy, seed, shots) cell is stored in the project (table ``al_results``) as
soon as it is scored, so a cancelled run resumes and a rerun skips what is stored. A cell is
identified by the setup (dataset rows, test split, learner and its parameters) and the strategy
with its parameters (the counterfactual source included).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.active.errors import ActiveLearningError, BadShotsError, PoolError
from engine.active.learners import EmbedLogReg, Learner, learner_key, make_learner
from engine.active.strategies import STRATEGIES, CounterfactualSource, Pool, Strategy, make_strategy
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["DEFAULT_SHOTS", "Cell", "SimulationResult", "SummaryRow", "load_cells", "simulate"]

#: The paper's budgets (it also reports 50, 70 and 90).
DEFAULT_SHOTS = (10, 15, 30, 60, 120)
#: Seeds 0..4.
DEFAULT_SEEDS = 5
#: Embedding cache of the simulation, inside the project's files folder.
EMBEDDING_CACHE = Path("active") / "minilm-embeddings.npz"


@dataclass(frozen=True)
class Cell:
    """One trained learner: a strategy's first ``shots`` annotations for one seed, scored on the test split."""

    strategy: str
    strategy_key: str
    learner: str
    seed: int
    shots: int
    train_rows: int
    added: int
    macro_f1: float
    accuracy: float
    n_test: int
    selected: tuple[int, ...] = ()


@dataclass(frozen=True)
class SummaryRow:
    """Mean and sample standard deviation of macro-F1 over seeds, per budget, for one strategy."""

    strategy: str
    shots: tuple[int, ...]
    mean: tuple[float, ...]
    sd: tuple[float, ...]
    n_seeds: tuple[int, ...]
    added: tuple[float, ...]


@dataclass(frozen=True)
class SimulationResult:
    """What a simulation produced and found stored.

    Attributes
    ----------
    dataset
        The dataset's name.
    learner
        The learner's name.
    strategies, shots, seeds
        What was asked for, in order.
    cells
        Every stored cell of the requested strategies × seeds × shots.
    computed, skipped
        Cells computed by this call, and cells found already stored.
    pool_size, test_size
        Sizes of the unlabelled pool and the held-out split.
    run_id
        The ``runs`` row of this call.
    """

    dataset: str
    learner: str
    strategies: tuple[str, ...]
    shots: tuple[int, ...]
    seeds: tuple[int, ...]
    cells: tuple[Cell, ...]
    computed: int
    skipped: int
    pool_size: int
    test_size: int
    run_id: int | None = None
    labels: tuple[str, ...] = field(default=())

    def table(self) -> list[SummaryRow]:
        """Mean ± SD (over seeds) of macro-F1 per strategy and budget."""
        rows = []
        for s in self.strategies:
            means, sds, ns, added = [], [], [], []
            for b in self.shots:
                values = [c.macro_f1 for c in self.cells if c.strategy == s and c.shots == b]
                extra = [c.added for c in self.cells if c.strategy == s and c.shots == b]
                means.append(statistics.fmean(values) if values else math.nan)
                sds.append(statistics.stdev(values) if len(values) > 1 else (0.0 if values else math.nan))
                ns.append(len(values))
                added.append(statistics.fmean(extra) if extra else math.nan)
            rows.append(SummaryRow(s, self.shots, tuple(means), tuple(sds), tuple(ns), tuple(added)))
        return rows

    def format_table(self) -> str:
        """The table as text: one row per strategy, one column per budget, ``mean ± SD``."""
        rows = self.table()
        name_w = max([len("strategy")] + [len(r.strategy) for r in rows])
        head = f"{'strategy':<{name_w}}  " + "  ".join(f"{b:>13}" for b in self.shots)
        lines = [f"macro-F1, mean ± SD over {len(self.seeds)} seeds ({self.dataset}, {self.learner}, "
                 f"pool {self.pool_size}, test {self.test_size})", head, "-" * len(head)]
        for r in rows:
            cells = [f"{m:.3f} ± {sd:.3f}" if not math.isnan(m) else "—" for m, sd in zip(r.mean, r.sd, strict=True)]
            lines.append(f"{r.strategy:<{name_w}}  " + "  ".join(f"{c:>13}" for c in cells))
        for r in rows:
            if any(a > 0 for a in r.added if not math.isnan(a)):
                lines.append(f"({r.strategy}: counterfactual rows added per budget, mean: "
                             + ", ".join(f"{b}: {a:.1f}" for b, a in zip(r.shots, r.added, strict=True)) + ")")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (table and cells)."""
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        return {
            "dataset": self.dataset, "learner": self.learner, "shots": list(self.shots), "seeds": list(self.seeds),
            "pool_size": self.pool_size, "test_size": self.test_size, "computed": self.computed,
            "skipped": self.skipped,
            "table": [{"strategy": r.strategy, "macro_f1_mean": [num(m) for m in r.mean],
                       "macro_f1_sd": [num(s) for s in r.sd], "seeds": list(r.n_seeds),
                       "added_mean": [num(a) for a in r.added]} for r in self.table()],
        }

    def write_csv(self, path: str | Path, *, project: str | Path | None = None) -> Path:
        """Write one line per strategy and budget (mean, SD, seeds) as CSV.

        Written atomically by :func:`engine.io.output.open_output`, which refuses ``project``
        (the open project file), its side files and folder, any other project, a folder, a
        device, FIFO or link (:class:`~engine.errors.OutputPathError`).
        """
        import csv

        from engine.io.output import open_output

        path = Path(path)
        with open_output(path, project=project, what="the simulation CSV", newline="") as f:
            w = csv.writer(f)
            w.writerow(["strategy", "shots", "macro_f1_mean", "macro_f1_sd", "seeds", "added_mean"])
            for r in self.table():
                for b, m, s, n, a in zip(r.shots, r.mean, r.sd, r.n_seeds, r.added, strict=True):
                    w.writerow([r.strategy, b, f"{m:.6f}", f"{s:.6f}", n, f"{a:.2f}"])
        return path

    def plot(self, path: str | Path, *, title: str | None = None, project: str | Path | None = None) -> Path:
        """Draw macro-F1 (mean ± SD band) against shots, one line per strategy, into a PNG file.

        Written atomically and checked like :meth:`write_csv`.
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from engine.evaluation.report_render import plain_text
        from engine.io.output import check_output_path, open_output

        path = Path(path)
        fig = Figure(figsize=(6.4, 4.2))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        for r in self.table():
            x = np.array(r.shots, dtype=float)
            m, s = np.array(r.mean), np.array(r.sd)
            (line,) = ax.plot(x, m, marker="o", label=plain_text(r.strategy))
            ax.fill_between(x, m - s, m + s, alpha=0.15, color=line.get_color())
        ax.set_xlabel("annotated examples (shots)")
        ax.set_ylabel("macro-F1 on the held-out split")
        ax.set_xticks(list(self.shots))
        ax.set_ylim(0.0, 1.0)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        ax.set_title(plain_text(title or f"{self.dataset}: {self.learner}, mean ± SD over {len(self.seeds)} seeds"),
                     fontsize=10)
        check_output_path(path, project=project)  # before drawing: a refused target costs nothing
        fig.tight_layout()
        kind = path.suffix.lower().lstrip(".")
        with open_output(path, "wb", project=project, what="the plot") as f:
            fig.savefig(f, dpi=120, format=kind if kind in fig.canvas.get_supported_filetypes() else "png")
        return path


# ---------------------------------------------------------------------------- running


def _check_shots(shots: Sequence[int]) -> tuple[int, ...]:
    try:
        values = sorted({int(b) for b in shots})
    except (TypeError, ValueError) as exc:
        raise BadShotsError(f"Budgets {list(shots)!r} are not whole numbers.", "Write e.g. 10,15,30,60,120.") from exc
    if not values or values[0] < 1:
        raise BadShotsError(f"Budgets {list(shots)!r} must be positive.", "Write e.g. 10,15,30,60,120.")
    return tuple(values)


def _check_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(seeds, int):
        if seeds < 1:
            raise BadShotsError(f"{seeds} seeds: at least one is needed.", "Use --seeds 1 or more (default 5).")
        return tuple(range(seeds))
    values = tuple(dict.fromkeys(int(s) for s in seeds))
    if not values:
        raise BadShotsError("No seeds given.", "Use at least one seed (default 5).")
    return values


def _split(ids: np.ndarray, labels: list[str], splits: list[str | None], test_split: str | None,
           test_fraction: float, split_seed: int, dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the pool and of the test split."""
    if test_split is not None:
        test = np.array([i for i, s in enumerate(splits) if s == test_split], dtype=int)
        if not len(test):
            known = sorted({str(s) for s in splits})
            raise PoolError(f"Dataset {dataset!r} has no rows in split {test_split!r}.",
                            f"Splits there: {', '.join(known)}; or leave out the test split to hold out a sample.")
        pool = np.array([i for i, s in enumerate(splits) if s != test_split], dtype=int)
        return pool, test
    if not 0.0 < test_fraction < 1.0:
        raise PoolError(f"Test fraction {test_fraction} is not between 0 and 1.", "Use e.g. 0.3.")
    rng = np.random.default_rng([split_seed, 104729])
    test_parts = []
    by_label: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        by_label.setdefault(lab, []).append(i)
    for lab in sorted(by_label):
        members = np.array(by_label[lab])
        k = int(round(len(members) * test_fraction))
        if len(members) >= 2:
            k = min(max(k, 1), len(members) - 1)
        test_parts.append(rng.choice(members, size=k, replace=False) if k else np.array([], dtype=int))
    test = np.sort(np.concatenate(test_parts).astype(int))
    pool = np.setdiff1d(np.arange(len(ids)), test)
    return pool, test


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def strategy_key(strategy: Strategy) -> str:
    """Identity of a strategy's name and parameters (16 hex digits)."""
    return _hash([strategy.name, strategy.params()])


def load_cells(project: Project, setup_key: str, strategy_keys: Sequence[str] | None = None) -> list[Cell]:
    """Stored cells of a setup (optionally of some strategies), oldest first."""
    sql = "SELECT * FROM al_results WHERE setup_key = ?"
    params: list[Any] = [setup_key]
    if strategy_keys is not None:
        sql += " AND strategy_key IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(strategy_keys)))
    return [Cell(r["strategy"], r["strategy_key"], r["learner"], int(r["seed"]), int(r["shots"]), int(r["train_rows"]),
                 int(r["added"]), float(r["macro_f1"]), float(r["accuracy"]), int(r["n_test"]),
                 tuple(json.loads(r["selected"]))) for r in project.db.query(sql + " ORDER BY id", params)]


def _store(conn: sqlite3.Connection, run_id: int, dataset_id: int, setup: str, cell: Cell, params: dict) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO al_results (run_id, dataset_id, setup_key, strategy, strategy_key, learner, seed, "
        "shots, train_rows, added, macro_f1, accuracy, n_test, selected, params, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, dataset_id, setup, cell.strategy, cell.strategy_key, cell.learner, cell.seed, cell.shots,
         cell.train_rows, cell.added, cell.macro_f1, cell.accuracy, cell.n_test, json.dumps(list(cell.selected)),
         json.dumps(params, default=str), now()))


def simulate(
    project: Project,
    dataset: int | str,
    *,
    strategies: Sequence[str | Strategy] = ("random", "cluster"),
    shots: Sequence[int] = DEFAULT_SHOTS,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    learner: str | Learner = "embed-lr",
    counterfactuals: CounterfactualSource | None = None,
    test_split: str | None = None,
    test_fraction: float = 0.3,
    split_seed: int = 0,
    n_clusters: int = 10,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> SimulationResult:
    """Run (or resume) the active-learning simulation on a dataset of the project.

    Parameters
    ----------
    project
        The open project; cells are written to it as they are scored.
    dataset
        The dataset (id or name): its rows are the pool and the test split.
    strategies
        Strategy names (:data:`~engine.active.strategies.STRATEGIES`) or strategy objects.
    shots
        Budgets: numbers of annotated examples (default 10, 15, 30, 60, 120).
    seeds
        Number of seeds (0..N-1, default 5) or the seeds themselves.
    learner
        Learner name (:data:`~engine.active.learners.LEARNERS`, default ``embed-lr``) or object.
    counterfactuals
        The source the counterfactual strategies read (:mod:`engine.active.counterfactuals`).
    test_split
        A split of the dataset held out for testing (default: a stratified sample).
    test_fraction, split_seed
        Size and seed of the held-out sample when no ``test_split`` is named.
    n_clusters
        k of the cluster strategies built from names.
    progress, cancel
        Progress callback and cancel token (checked between cells).

    Returns
    -------
    SimulationResult

    Raises
    ------
    UnknownStrategyError, UnknownLearnerError
        Unknown names.
    BadShotsError
        Non-positive budgets or seeds, or a budget larger than the pool.
    PoolError
        No such test split, or a pool/test split with fewer than two labels.
    CounterfactualSourceError
        A counterfactual strategy without a source.
    """
    from engine.evaluation.experiment import score
    from engine.store.runs import recorded_run

    token = ensure_token(cancel)
    budgets = _check_shots(shots)
    seed_list = _check_seeds(seeds)
    if not strategies:
        raise ActiveLearningError("No strategy given.", f"Use some of: {', '.join(STRATEGIES.names())}.")
    built: list[Strategy] = []
    for s in strategies:
        if isinstance(s, Strategy):
            built.append(s)
        else:
            extra = {"n_clusters": n_clusters} if "cluster" in s else {}
            built.append(make_strategy(s, counterfactuals=counterfactuals, **extra))
    names = [s.name for s in built]
    if len(set(names)) != len(names):
        raise ActiveLearningError(f"Strategies {names} repeat a name.", "Name each strategy once.")
    info = project.dataset(dataset)
    if isinstance(learner, str):
        learner = make_learner(learner, **({"cache": project.files_dir / EMBEDDING_CACHE}
                                           if learner == "embed-lr" else {}))
    fields = info.text_fields
    rows = list(project.iter_examples(info.id))
    ids = np.array([int(r["id"]) for r in rows], dtype=np.int64)
    texts = [tuple(r.get(f) or "" for f in fields) for r in rows]
    labels = [str(r["label"]) for r in rows]
    pool_pos, test_pos = _split(ids, labels, [r.get("split") for r in rows], test_split, test_fraction, split_seed,
                                info.name)
    if len({labels[i] for i in test_pos}) < 2 or len({labels[i] for i in pool_pos}) < 2:
        raise PoolError(f"The pool ({len(pool_pos)} rows) or the test split ({len(test_pos)} rows) of "
                        f"{info.name!r} holds fewer than two labels.", "Use a larger dataset or another test split.")
    if budgets[-1] > len(pool_pos):
        raise BadShotsError(f"A budget of {budgets[-1]} shots exceeds the pool of {len(pool_pos)} examples.",
                            "Use smaller budgets, a smaller test split or a larger dataset.")
    pool = Pool(tuple(int(ids[i]) for i in pool_pos), tuple(texts[i] for i in pool_pos),
                tuple(labels[i] for i in pool_pos))
    test_texts = [texts[i] for i in test_pos]
    test_gold = [labels[i] for i in test_pos]
    lkey = learner_key(learner)
    setup = _hash({"dataset": info.id, "created_at": info.created_at, "rows": info.row_count,
                   "test": hashlib.sha256(ids[test_pos].tobytes()).hexdigest()[:16], "learner": lkey})
    keys = {s.name: strategy_key(s) for s in built}
    done = {(c.strategy_key, c.seed, c.shots) for c in load_cells(project, setup, list(keys.values()))}
    jobs = [(s, seed) for s in built for seed in seed_list]
    todo_total = sum(1 for s, seed in jobs for b in budgets if (keys[s.name], seed, b) not in done)
    params = {"dataset": info.name, "strategies": {s.name: s.params() for s in built}, "shots": list(budgets),
              "seeds": list(seed_list), "learner": learner.label, "learner_params": learner.params(),
              "test_split": test_split, "test_fraction": test_fraction, "split_seed": split_seed,
              "pool": len(pool), "test": len(test_pos), "setup_key": setup}
    computed = 0
    skipped = len(jobs) * len(budgets) - todo_total
    with recorded_run(project, "al-simulate", info.id, params) as run:
        if todo_total:
            progress(0.0, f"{learner.label}: preparing features of {len(pool) + len(test_pos):,} texts")
            learner.prepare(list(pool.texts) + test_texts, progress=scaled(progress, 0.0, 0.15), cancel=token)
            if any(s.needs_vectors for s in built):
                embedder = learner if isinstance(learner, EmbedLogReg) else EmbedLogReg(
                    cache=project.files_dir / EMBEDDING_CACHE)
                pool.vectors = embedder.features(pool.texts)
        loop = scaled(progress, 0.15 if todo_total else 0.0, 1.0)
        for s in built:
            cell_params = {"strategy": s.params(), "learner": learner.params()}
            for seed in seed_list:
                missing = [b for b in budgets if (keys[s.name], seed, b) not in done]
                if not missing:
                    continue
                token.raise_if_cancelled()
                order = s.order(pool, budgets[-1], seed)
                for b in missing:
                    token.raise_if_cancelled()
                    chosen = order[:b]
                    sel_ids = [pool.ids[i] for i in chosen]
                    train_x = [pool.texts[i] for i in chosen]
                    train_y = [pool.labels[i] for i in chosen]
                    extra = s.augment(sel_ids)
                    model = learner.fit(train_x + [t for t, _ in extra], train_y + [lab for _, lab in extra], seed)
                    accuracy, f1 = score(model.predict(test_texts), test_gold)
                    cell = Cell(s.name, keys[s.name], learner.label, seed, b, len(train_x) + len(extra), len(extra),
                                f1, accuracy, len(test_gold), tuple(sel_ids))
                    project.writer.run(_store, run.id, info.id, setup, cell, cell_params)
                    computed += 1
                    loop(computed / todo_total, f"{s.name}, seed {seed}, {b} shots: macro-F1 {f1:.3f}")
        run.result = {"computed": computed, "skipped": skipped}
        run.message = f"{computed} cells computed, {skipped} already stored"
    wanted = {(keys[s.name], seed, b) for s in built for seed in seed_list for b in budgets}
    cells = tuple(c for c in load_cells(project, setup, list(keys.values()))
                  if (c.strategy_key, c.seed, c.shots) in wanted)
    progress(1.0, f"al-simulate: {computed} cells computed, {skipped} already stored")
    return SimulationResult(info.name, learner.label, tuple(names), budgets, seed_list, cells, computed, skipped,
                            len(pool), len(test_pos), run.id, tuple(info.labels))
