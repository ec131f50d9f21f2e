"""CAD sentiment downstream table (issue 12, item 5) for the conditions that need no generated candidates.

D_ori = the 1,707 CAD train originals; + a size control of 1,707 more IMDb (Maas) train originals
(CAD originals removed, a seeded sample per seed); + the 1,707 human revisions. Tested on CAD dev
originals (in-domain), CAD dev revisions and the contrast-set dev edits (counterfactual). Also the
diversity of the human revisions against their originals (CAD paired train).

Run: ``nice -n 10 python benchmarks/cad_downstream.py [--project P] [--classifier tfidf-lr] [--seeds 3]``.
The project is kept (resumable): a rerun only computes what is missing.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _imdb_extra(folder: Path) -> Path:
    """IMDb train reviews that are neither CAD train nor CAD dev originals (the dev ones would leak into the
    tests: the contrast-set dev originals are CAD dev originals too), labels renamed Positive/Negative."""
    cad = set()
    for split in ("train", "dev"):
        with open(DATA / f"cad/sentiment/orig/{split}.tsv", encoding="utf-8", newline="") as f:
            cad |= {_norm(r["Text"]) for r in csv.DictReader(f, delimiter="\t")}
    out = folder / "imdb_extra.csv"
    kept = 0
    with gzip.open(DATA / "imdb_maas/train.tsv.gz", "rt", encoding="utf-8", newline="") as f, \
            open(out, "w", encoding="utf-8", newline="") as g:
        w = csv.writer(g)
        w.writerow(["id", "text", "label"])
        for r in csv.DictReader(f, delimiter="\t"):
            if _norm(r["text"]) not in cad:
                w.writerow([r["id"], r["text"], {"pos": "Positive", "neg": "Negative"}[r["label"]]])
                kept += 1
    print(f"IMDb extra originals: {kept:,}", file=sys.stderr)
    return out


def evaluate_and_print(project, conditions: list, classifier: str, seeds: int, preset: str | None = None) -> None:
    """Train and test ``conditions`` over ``seeds`` seeds (reusing stored results) and print the table; ``preset``
    is the training preset of a ``backbone:<name>`` classifier (default: the classifier's own)."""
    from engine.evaluation.classifiers import make_classifier
    from engine.evaluation.experiment import run_evaluation
    from engine.evaluation.table import format_table

    made = make_classifier(classifier, **({"preset": preset} if preset else {}))
    result = run_evaluation(project, conditions, made, seeds=list(range(seeds)),
                            progress=lambda f, m="": print(f"  {f:5.1%} {m}", file=sys.stderr))
    print(format_table(result.table()))
    print(f"({result.computed} computed, {result.skipped} reused; accuracy %, mean ± 95% t-CI over {seeds} seeds; "
          f"classifier {classifier}{f', preset {preset}' if preset else ''})")


def add_imdb_extra(project) -> bool:
    """Import the IMDb extra originals (the size control) into ``project`` unless it holds them; False when the
    IMDb data is not in ``../shared``."""
    from engine.io import ImportOptions, import_file

    if any(d.name == "imdb-extra" for d in project.datasets()):
        return True
    if not (DATA / "imdb_maas/train.tsv.gz").exists():
        return False
    with tempfile.TemporaryDirectory() as tmp:
        r = import_file(project, _imdb_extra(Path(tmp)), options=ImportOptions(name="imdb-extra", split="train"))
    print(f"imported imdb-extra: {r.rows:,} rows {r.label_counts}", file=sys.stderr)
    return True


def open_project(path: Path, *, imdb: bool = True):
    """The downstream project at ``path``, created on first use: CAD train originals and revisions, IMDb extra
    originals (``imdb``: the size control; needs ``imdb_maas``), and the three test sets, marked."""
    from engine.evaluation.test_sets import mark_test_set
    from engine.io import ImportOptions, import_file
    from engine.store import Project

    if path.exists():
        return Project.open(path)
    project = Project.create(path)
    with tempfile.TemporaryDirectory() as tmp:
        imports = [
            ("cad-orig-train", DATA / "cad/sentiment/orig/train.tsv", "train"),
            ("cad-new-train", DATA / "cad/sentiment/new/train.tsv", "train"),
            *([("imdb-extra", _imdb_extra(Path(tmp)), "train")] if imdb else []),
            ("cad-orig-dev", DATA / "cad/sentiment/orig/dev.tsv", "dev"),
            ("cad-new-dev", DATA / "cad/sentiment/new/dev.tsv", "dev"),
            ("contrast-dev", DATA / "contrast_sets_imdb/data/dev_contrast.tsv", "dev"),
        ]
        for name, source, split in imports:
            r = import_file(project, source, options=ImportOptions(name=name, split=split))
            print(f"imported {name}: {r.rows:,} rows {r.label_counts}", file=sys.stderr)
    mark_test_set(project, "cad-orig-dev", "", "in-domain", "CAD dev orig")
    mark_test_set(project, "cad-new-dev", "", "counterfactual", "CAD dev revised")
    mark_test_set(project, "contrast-dev", "", "counterfactual", "contrast dev")
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", type=Path, default=Path(tempfile.gettempdir()) / "cad_downstream.cbproj")
    parser.add_argument("--classifier", default="tfidf-lr")
    parser.add_argument("--preset", default=None, help="training preset of a backbone:<name> classifier "
                        "(e.g. sample-cpu, the CPU default; default: fast-cpu)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-diversity", action="store_true")
    args = parser.parse_args()

    from engine.evaluation.conditions import parse_condition

    with open_project(args.project) as project:
        conditions = [
            parse_condition("D_ori=cad-orig-train"),
            parse_condition("+1707 IMDb originals=cad-orig-train+imdb-extra@1707"),
            parse_condition("+human revisions=cad-orig-train+cad-new-train"),
        ]
        evaluate_and_print(project, conditions, args.classifier, args.seeds, args.preset)
    if not args.no_diversity:
        from engine.evaluation.diversity_report import pair_diversity

        with open(DATA / "cad/sentiment/combined/paired/train_paired.tsv", encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        parents = [rows[i]["Text"] for i in range(0, len(rows), 2)]
        edits = [rows[i + 1]["Text"] for i in range(0, len(rows), 2)]
        report = pair_diversity(edits, parents)
        print("human revisions vs originals (CAD paired train):")
        for k, v in report.as_dict().items():
            print(f"  {k:16} {v:.4f}" if isinstance(v, float) else f"  {k:16} {v}")


if __name__ == "__main__":
    main()
