"""Cost of explaining one review with the CoBA ensemble: full settings vs the fast defaults.

Explains the first ``--reviews`` CAD sentiment dev reviews (default 50) with every member x
method (default: members ``minilm-l6``, ``minilm-l3``, ``mpnet-base``; methods IG, LIME,
Shapley) twice in ONE run:

* **full** — ``budget="full"``: the settings used before (IG 50 Gauss-Legendre steps, one
  200-step redo of examples whose |delta| > 0.05; LIME 200 samples; Shapley 10 permutations);
* **fast** — the defaults (``budget="fast"``): IG from few steps, refined only until
  completeness holds; LIME and Shapley samples sized to the number of words; batched forward
  passes in inference mode (see :mod:`engine.attribution.budget`).

It prints seconds per review for each member x method and in total, the speed-up, the
largest |IG delta| of each, and how well the fast vote (:func:`engine.attribution.vote.vote_example`,
default :class:`~engine.attribution.vote.VoteSettings`) matches the full one on principal
words: **recall** = mean over reviews of ``|fast ∩ full| / |full|`` (reviews whose full vote has
no principal word are skipped) and **Jaccard** = mean ``|fast ∩ full| / |fast ∪ full|`` (two
empty sets count as 1).

Members come from ``--project`` (an existing ``.cbproj`` with a CAD dataset and trained
members, named with ``--members``), or are trained here on the CAD train split with the
``fast-cpu`` preset (``--max-train-rows``, ``--epochs`` and ``--max-length`` make that cheaper;
the project is kept in ``--workdir`` and reused by later runs with the same options).

Usage::

    python benchmarks/explain_cost.py                      # the full benchmark (slow on a CPU)
    python benchmarks/explain_cost.py --reviews 5 --members minilm-l3,minilm-l6 --max-train-rows 300 --epochs 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

CAD = REPO.parent / "shared" / "data" / "cad" / "sentiment" / "orig"
METHODS = ("ig", "lime", "shapley")


def build_project(workdir: Path, backbones: list[str], args: argparse.Namespace):
    """A project with CAD sentiment (train + dev) and one member per backbone (reused when present)."""
    from engine.io.importer import ImportOptions, import_file
    from engine.models import MemberSpec, train_member, train_preset
    from engine.store import Project

    workdir.mkdir(parents=True, exist_ok=True)
    lr = f"-lr{args.learning_rate:g}" if args.learning_rate else ""
    path = workdir / f"cad-rows{args.max_train_rows or 'all'}-ep{args.epochs}-len{args.max_length}{lr}.cbproj"
    project = Project.open(path) if path.exists() else Project.create(path)
    datasets = project.datasets() if hasattr(project, "datasets") else []
    dataset = next((d for d in datasets if d.name == "cad"), None)
    if dataset is None:
        result = import_file(project, CAD / "train.tsv", options=ImportOptions(name="cad"))
        import_file(project, CAD / "dev.tsv", options=ImportOptions(append_to=result.dataset.id, split="dev"))
        dataset = project.dataset(result.dataset.id)
    overrides = {"epochs": args.epochs, "max_length": args.max_length}
    if args.max_train_rows:
        overrides["max_train_rows"] = args.max_train_rows
    if args.learning_rate:
        overrides["learning_rate"] = args.learning_rate
    for backbone in backbones:
        spec = MemberSpec(backbone, backbone, {}, train_preset("fast-cpu", **overrides))
        t0 = time.perf_counter()
        result = train_member(project, dataset.id, spec)
        print(f"member {backbone}: dev accuracy {result.dev_accuracy:.3f}"
              f"{' (reused)' if result.skipped else f', trained in {time.perf_counter() - t0:.0f} s'}", flush=True)
    return project, dataset


def dev_reviews(project, dataset, n: int, fields):
    """The first ``n`` dev examples as :class:`~engine.attribution.ExampleInput`."""
    from engine.attribution import ExampleInput
    from engine.models.data import example_texts
    from engine.store import ExampleQuery

    ids = [int(i) for i in project.example_ids(ExampleQuery(dataset.id, splits=("dev",)))][:n]
    rows = project.examples(ids)
    return [ExampleInput(int(r["id"]), example_texts(r, fields), r["label"]) for r in rows]


def run_budget(member, info, examples, method: str, budget: str):
    """Seconds and results of one member x method at one budget."""
    from engine.attribution import attribute_texts, resolve_settings
    from engine.attribution.core import AttributionStats
    from engine.attribution.jobs import DEFAULT_BATCH_SIZE

    settings = resolve_settings(method, {"budget": budget})
    stats = AttributionStats()
    t0 = time.perf_counter()
    with member.lock:
        out = attribute_texts(
            member.model, member.tokenizer, info.labels, info.fields, examples, method, settings,
            max_length=info.max_length, batch_size=DEFAULT_BATCH_SIZE.get(method, 8), stats=stats,
        )
    return time.perf_counter() - t0, out, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=50, help="CAD dev reviews to explain (default 50)")
    parser.add_argument("--members", default="minilm-l6,minilm-l3,mpnet-base",
                        help="comma-separated backbones (trained here) or member names (with --project)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--project", type=Path, help="reuse this project (its dataset 'cad' or --dataset, its members)")
    parser.add_argument("--dataset", default="cad", help="dataset name inside --project")
    parser.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "explain_cost")
    parser.add_argument("--max-train-rows", type=int, help="train members on at most this many CAD train rows")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs (fast-cpu: 2)")
    parser.add_argument("--max-length", type=int, default=128, help="member max length (fast-cpu: 128)")
    parser.add_argument("--learning-rate", type=float, help="training learning rate (fast-cpu: 1e-4)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    args = parser.parse_args()

    import numpy as np
    import torch

    from engine.attribution.vote import VoteSettings, vote_example
    from engine.models.loading import load_member
    from engine.models.store import get_model

    if args.threads:
        torch.set_num_threads(args.threads)
    members = [m.strip() for m in args.members.split(",") if m.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.project:
        from engine.store import Project

        project = Project.open(args.project)
        dataset = next(d for d in project.datasets() if d.name == args.dataset)
    else:
        project, dataset = build_project(args.workdir, members, args)

    infos = [get_model(project, m) for m in members]
    examples = dev_reviews(project, dataset, args.reviews, infos[0].fields)
    n_words = [len(ex.texts[0].split()) for ex in examples]
    print(f"\n{len(examples)} CAD dev reviews ({np.mean(n_words):.0f} whitespace words on average), members "
          f"{', '.join(members)}, methods {', '.join(methods)}; torch {torch.__version__}, {torch.get_num_threads()} threads")

    seconds = {b: {} for b in ("full", "fast")}
    scores = {b: {} for b in ("full", "fast")}
    deltas = {b: {} for b in ("full", "fast")}
    words: dict[int, list[str]] = {}
    for info in infos:
        member = load_member(project, info.name)
        # warm-up: lazy imports and allocator, not timed
        run_budget(member, info, examples[:1], "ig", "fast")
        for method in methods:
            for budget in ("full", "fast"):
                sec, out, stats = run_budget(member, info, examples, method, budget)
                seconds[budget][(info.name, method)] = sec
                deltas[budget][(info.name, method)] = max((abs(d) for d in stats.deltas), default=None)
                for r in out:
                    f = r.fields[0]
                    if len(f.words) > len(words.get(r.example_id, [])):
                        words[r.example_id] = f.words
                    scores[budget].setdefault(r.example_id, {}).setdefault(info.name, {})[method] = f.scores
                print(f"  {info.name:<12} {method:<8} {budget:<5} {sec / len(examples):7.2f} s/review", flush=True)

    n = len(examples)
    print(f"\nSeconds per review (noisy: single run)\n{'member':<14}{'method':<9}{'full':>9}{'fast':>9}{'speed-up':>10}{'max|delta| full':>17}{'fast':>8}")
    for info in infos:
        for method in methods:
            full, fast = seconds["full"][(info.name, method)], seconds["fast"][(info.name, method)]
            df, dq = deltas["full"][(info.name, method)], deltas["fast"][(info.name, method)]
            fmt = lambda d: "" if d is None else f"{d:.3f}"  # noqa: E731
            print(f"{info.name:<14}{method:<9}{full / n:9.2f}{fast / n:9.2f}{full / max(fast, 1e-9):9.1f}x{fmt(df):>17}{fmt(dq):>8}")
    total_full, total_fast = sum(seconds["full"].values()), sum(seconds["fast"].values())
    print(f"{'total':<23}{total_full / n:9.2f}{total_fast / n:9.2f}{total_full / total_fast:9.1f}x")

    settings = VoteSettings()
    recall, jaccard, same = [], [], 0
    for ex in examples:
        w = words.get(ex.id, [])
        full = set(vote_example(w, scores["full"][ex.id], settings).principal)
        fast = set(vote_example(w, scores["fast"][ex.id], settings).principal)
        same += full == fast
        if full:
            recall.append(len(full & fast) / len(full))
        jaccard.append(len(full & fast) / len(full | fast) if full | fast else 1.0)
    print(f"\nPrincipal words, fast vs full vote ({settings.k=}, combine={settings.combine!r}): "
          f"recall |fast ∩ full|/|full| = {np.mean(recall):.3f} (over {len(recall)} reviews with principal words), "
          f"mean Jaccard = {np.mean(jaccard):.3f}, identical sets {same}/{n}")
    print(f"Speed-up per review: {total_full / total_fast:.1f}x ({total_full / n:.1f} s -> {total_fast / n:.1f} s)")


if __name__ == "__main__":
    main()
