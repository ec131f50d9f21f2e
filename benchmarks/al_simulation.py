"""The active-learning simulation of issue 14 on its two real multi-class sets (macro-F1 ± SD over seeds).

``imdb-fine``: 500 IMDb train reviews, four rating classes (1-2, 3-4, 7-8, 9-10), 125 each, seed 0.
``cad-nli``: 500 CAD NLI original train pairs, hypothesis as the text, three classes, seed 0, with CAD's
human revised hypotheses (two per pair, one per other label) stored as accepted candidates: the
counterfactual strategy reads them (``--counterfactuals stored``), so it runs without an LLM.

Strategies: random and cluster on both; counterfactual (random selection + counterfactuals) and
counterfactual-cluster where stored candidates exist. Budgets 10/15/30/60/120, learner embed-lr
(logistic regression on MiniLM-L6 embeddings), 30 % held out. The full pool (every pool example
labelled) is the reference ceiling. Writes ``<set>.txt``, ``<set>.csv`` and ``<set>.png`` to ``--out``.

Run: ``nice -n 10 python benchmarks/al_simulation.py [--out DIR] [--seeds 5] [--learner embed-lr]``.
The project in ``--out`` is kept: a rerun only computes missing cells.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def main() -> int:
    from engine.active.counterfactuals import StoredCounterfactuals
    from engine.active.datasets import build_cad_nli, build_imdb_fine, store_cad_counterfactuals
    from engine.active.simulation import simulate
    from engine.io import ImportOptions, import_file
    from engine.store import Project

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "al-simulation")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--learner", default="embed-lr")
    parser.add_argument("--shots", default="10,15,30,60,120")
    args = parser.parse_args()
    shots = [int(s) for s in args.shots.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "al.cbproj"
    project = Project.open(path) if path.exists() else Project.create(path)
    with project:
        names = {d.name for d in project.datasets()}
        if "imdb-fine" not in names:
            csv = build_imdb_fine(args.data / "imdb_maas" / "train.tsv.gz", args.out / "imdb-fine.csv", n=500, seed=0)
            import_file(project, csv, options=ImportOptions(name="imdb-fine"))
        if "cad-nli" not in names:
            csv = build_cad_nli(args.data / "cad" / "NLI", args.out / "cad-nli.csv", n=500, seed=0)
            import_file(project, csv, options=ImportOptions(name="cad-nli"))
            store_cad_counterfactuals(project, "cad-nli", args.data / "cad" / "NLI")
        source = StoredCounterfactuals(project)
        for name in ("imdb-fine", "cad-nli"):
            ids = [int(r["id"]) for r in project.iter_examples(project.dataset(name).id)]
            strategies = ["random", "cluster"]
            if source(ids):
                strategies += ["counterfactual", "counterfactual-cluster"]
            result = simulate(project, name, strategies=strategies, shots=shots, seeds=args.seeds,
                              learner=args.learner, counterfactuals=source,
                              progress=lambda f, m="": print(f"\r[{f:6.1%}] {m[:90]:90}", end="", file=sys.stderr))
            full = simulate(project, name, strategies=["random"], shots=[result.pool_size], seeds=1,
                            learner=args.learner)
            text = result.format_table() + (f"\nfull pool ({result.pool_size} labelled): macro-F1 "
                                            f"{full.cells[0].macro_f1:.3f}")
            print("\n" + text, flush=True)
            (args.out / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
            result.write_csv(args.out / f"{name}.csv")
            result.plot(args.out / f"{name}.png")
    print(f"wrote tables and plots to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
