"""Cost of explaining one review with the CoBA ensemble: full settings vs the fast defaults.

Explains the first ``--reviews`` CAD sentiment dev reviews (default 50) with every member x
method (default: members ``minilm-l6``, ``minilm-l3``, ``mpnet-base``; methods IG, LIME,
Shapley) twice in ONE run:

* **full** — ``budget="full"``: the settings used before (IG 50 Gauss-Legendre steps, one
  200-step redo of examples whose |delta| > 0.05; LIME 200 samples; Shapley 10 permutations);
* **fast** — ``budget="fast"``: IG with 16 nodes placed where the output changes, refined only
  when |delta| > 0.2; LIME and Shapley samples sized to the number of words; batched forward
  passes in inference mode.

It prints seconds per review for each member x method, the largest |IG delta| of each, and then,
for the Word importance panel's default methods (IG) and for every method run, per configuration
(budget x which members explain: every member, or the default explainers of
:mod:`engine.attribution.explainers`; ``--noise-floor`` adds the full budget run again with another
seed for LIME and Shapley, how far two runs of the old default agree) the seconds per review, the speed-up over the old default
(full budget, every member) and how well its vote (the app's: default
:class:`~engine.attribution.vote.VoteSettings` with the dataset's word prior and member weights,
a strict majority of the members) matches that old vote on principal words:
**recall** = mean over reviews of ``|ours ∩ full| / |full|`` (reviews whose full vote has no
principal word are skipped) and **Jaccard** = mean ``|ours ∩ full| / |ours ∪ full|`` (two empty
sets count as 1).

Members come from ``--project`` (an existing ``.cbproj`` with a CAD dataset and trained
members, named with ``--members``), or are trained here on the CAD train split with
``--preset`` (default ``sample-cpu``, the app's default without a GPU; ``--max-train-rows``, ``--epochs`` and ``--max-length`` make that cheaper;
the project is kept in ``--workdir`` and reused by later runs with the same options).

Usage::

    python benchmarks/explain_cost.py                      # the full benchmark (slow on a CPU)
    python benchmarks/explain_cost.py --reviews 5 --members minilm-l3,minilm-l6 --max-train-rows 300 --epochs 1
    python benchmarks/explain_cost.py --project cad.cbproj --dataset cad-train --reviews 30 --methods ig \
        --members bench-minilm-l6,bench-minilm-l3,bench-mpnet-base      # stop 40's run
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
    path = workdir / f"cad-{args.preset}-rows{args.max_train_rows or 'all'}-ep{args.epochs}-len{args.max_length}{lr}.cbproj"
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
        spec = MemberSpec(backbone, backbone, {}, train_preset(args.preset, backbone, **overrides))
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


def run_budget(member, info, examples, method: str, budget: str, seed: int | None = None):
    """Seconds and results of one member x method at one budget (``seed``: the sampling methods' seed)."""
    from engine.attribution import attribute_texts, resolve_settings
    from engine.attribution.kernel import AttributionStats
    from engine.attribution.jobs import DEFAULT_BATCH_SIZE

    settings = resolve_settings(method, {"budget": budget, **({"seed": seed} if seed is not None else {})})
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
    parser.add_argument("--preset", default="sample-cpu", help="training preset of members trained here (default "
                        "sample-cpu: MiniLMs fine-tuned on 800 rows, MPNet's top layer on 3,000)")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs (the CPU presets: 2)")
    parser.add_argument("--max-length", type=int, default=128, help="member max length (the CPU presets: 128)")
    parser.add_argument("--learning-rate", type=float, help="training learning rate (default: the preset's)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--noise-floor", action="store_true",
                        help="also run the full budget's LIME and Shapley with another seed: how far two runs of the "
                             "old default agree (a ceiling for any faster one)")
    args = parser.parse_args()

    import numpy as np
    import torch

    from engine.attribution.explainers import default_explainers
    from engine.attribution.vote import VoteSettings, vote_example
    from engine.attribution.vote_store import DEFAULT_METHODS, vote_context
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

    # "full-again": the full budget with another seed for the sampling methods (LIME, Shapley; IG is
    # deterministic, so its full scores are reused) — how far two runs of the old default agree
    budgets = ("full", "fast", "full-again") if args.noise_floor else ("full", "fast")
    seconds = {b: {} for b in budgets}
    scores = {b: {} for b in budgets}
    deltas = {b: {} for b in budgets}
    words: dict[int, list[str]] = {}
    for info in infos:
        member = load_member(project, info.name)
        # warm-up: lazy imports and allocator, not timed
        run_budget(member, info, examples[:1], "ig", "fast")
        for method in methods:
            for budget in budgets:
                if budget == "full-again" and method == "ig":
                    seconds[budget][(info.name, method)] = seconds["full"][(info.name, method)]
                    for ex_id, per_member in scores["full"].items():
                        scores[budget].setdefault(ex_id, {}).setdefault(info.name, {})[method] = per_member[info.name][method]
                    continue
                sec, out, stats = run_budget(member, info, examples, method, budget.split("-")[0],
                                             seed=1 if budget == "full-again" else None)
                seconds[budget][(info.name, method)] = sec
                deltas[budget][(info.name, method)] = max((abs(d) for d in stats.deltas), default=None)
                for r in out:
                    f = r.fields[0]
                    if len(f.words) > len(words.get(r.example_id, [])):
                        words[r.example_id] = f.words
                    scores[budget].setdefault(r.example_id, {}).setdefault(info.name, {})[method] = f.scores
                print(f"  {info.name:<12} {method:<8} {budget:<5} {sec / len(examples):7.2f} s/review", flush=True)

    n = len(examples)
    print(f"\nSeconds per review (noisy: single run)\n{'member':<18}{'method':<9}{'full':>9}{'fast':>9}{'speed-up':>10}{'max|delta| full':>17}{'fast':>8}")
    for info in infos:
        for method in methods:
            full, fast = seconds["full"][(info.name, method)], seconds["fast"][(info.name, method)]
            df, dq = deltas["full"][(info.name, method)], deltas["fast"][(info.name, method)]
            fmt = lambda d: "" if d is None else f"{d:.3f}"  # noqa: E731
            print(f"{info.name:<18}{method:<9}{full / n:9.2f}{fast / n:9.2f}{full / max(fast, 1e-9):9.1f}x{fmt(df):>17}{fmt(dq):>8}")
    total_full, total_fast = sum(seconds["full"].values()), sum(seconds["fast"].values())
    print(f"{'total':<27}{total_full / n:9.2f}{total_fast / n:9.2f}{total_full / total_fast:9.1f}x")

    explainers = [i.name for i in default_explainers(infos)]
    everyone = [i.name for i in infos]
    configs = [("full, every member (before)", "full", everyone)]
    if args.noise_floor:
        configs.append(("full, every member, another seed (noise floor)", "full-again", everyone))
    configs.append(("fast, every member", "fast", everyone))
    if explainers != everyone:
        configs += [("full, default explainers", "full", explainers),
                    ("fast, default explainers (after: app default)", "fast", explainers)]

    by_name = {i.name: i for i in infos}
    contexts: dict[tuple[str, ...], tuple] = {}

    def principal(ex, budget: str, names: list[str], used: tuple[str, ...]) -> set[str]:
        # the app's vote (default rule, its word prior and member weights) over these members and methods
        if tuple(names) not in contexts:
            settings = VoteSettings()
            contexts[tuple(names)] = settings, vote_context(project, [by_name[m] for m in names], settings,
                                                            dataset_id=dataset.id)
        settings, context = contexts[tuple(names)]
        chosen = {m: {meth: scores[budget][ex.id][m][meth] for meth in used} for m in names}
        return set(vote_example(words.get(ex.id, []), chosen, settings, context=context).principal)

    print(f"\nDefault explainers (engine.attribution.explainers): {', '.join(explainers)}"
          f"{'' if explainers != everyone else ' (every member)'}")
    print(f"Principal words against the full vote of every member ({VoteSettings().rule} vote, K={VoteSettings().k}): "
          f"recall = |ours ∩ full| / |full| over reviews with principal words; Jaccard (two empty sets = 1)")
    # the Word importance panel's default methods (IG), then every method run
    method_sets = list(dict.fromkeys([tuple(m for m in methods if m in DEFAULT_METHODS) or tuple(methods),
                                      tuple(methods)]))
    for used in method_sets:
        before = sum(seconds["full"][(m, meth)] for m in everyone for meth in used)
        reference = {ex.id: principal(ex, "full", everyone, used) for ex in examples}
        default = " (the panel's default methods)" if set(used) == set(DEFAULT_METHODS) else ""
        print(f"\nMethods {'+'.join(used)}{default}\n"
              f"{'configuration':<48}{'s/review':>9}{'speed-up':>10}{'recall':>8}{'Jaccard':>9}{'same set':>10}")
        for title, budget, names in configs:
            sec = sum(seconds[budget][(m, meth)] for m in names for meth in used)
            recall, jaccard, same = [], [], 0
            for ex in examples:
                ref, ours = reference[ex.id], principal(ex, budget, names, used)
                same += ref == ours
                if ref:
                    recall.append(len(ref & ours) / len(ref))
                jaccard.append(len(ref & ours) / len(ref | ours) if ref | ours else 1.0)
            print(f"{title:<48}{sec / n:9.2f}{before / sec:9.1f}x{np.mean(recall):8.3f}{np.mean(jaccard):9.3f}"
                  f"{same:>6}/{n}")


if __name__ == "__main__":
    main()
