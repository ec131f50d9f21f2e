"""The demo path timed end to end on a CPU: the CPU presets (sample-cpu, top-cpu, quick-cpu) vs full fine-tuning
(fast-cpu) in one run.

What a new user does on the bundled demo (``resources/demo``, CAD sentiment, 3,414 train +
490 dev rows): open the demo project -> train the ensemble -> explain one row (the Word
importance panel's default methods — IG — and default budget, for its default explainers
(:mod:`engine.attribution.explainers`: a member trained only on its top layer judges but does
not explain), through the engine's attribution API; ``--methods ig,lime,shapley`` for all three) -> vote /
highlights -> z-statistics. As in the app, the explaining members are trained first and the row is explained
as soon as they are stored, while the members that only judge still train (stages marked so). Each preset
runs in its own fresh project (its features cache included), with 2 torch threads, and prints seconds per
stage, when the whole ensemble was trained, and each member's dev accuracy.

Goal (issue 11): a CPU preset's path takes <= 10 min in total, and its best member's dev
accuracy is within 3 points of the best fully fine-tuned member (printed for each CPU preset).
The path as it was before the explainers were trained first (every member, then the row) is
printed beside it: the whole ensemble's time plus the same stages.

Full fine-tuning of the default 3 members takes about an hour on 2 cores (MPNet alone about
45 min); ``--full-members`` limits the full fine-tuning baseline to some members::

    python benchmarks/demo_path.py --rows 400 --members minilm-l3
    python benchmarks/demo_path.py --presets sample-cpu,top-cpu   # CPU presets only, full data
    python benchmarks/demo_path.py --presets sample-cpu,fast-cpu --full-members minilm-l6

Timings on a shared machine are noisy: compare presets within one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

GOAL_SECONDS = 600
GOAL_POINTS = 3.0
#: Presets made for a CPU (the goals are checked for each): the sample one, and those that do not fine-tune every
#: weight.
CPU_PRESETS = ("sample-cpu", "quick-cpu", "top-cpu")


def run_preset(preset: str, members: list[str], rows: int | None, workdir: Path, methods: tuple[str, ...]) -> dict:
    """Run the demo path with one preset; return stage seconds and member accuracies.

    As in the app, the ensemble trains in a job of its own and the members that explain are
    trained first (:func:`engine.models.train.training_order`): once they are stored, the row is
    explained, voted on and the z-statistics computed *while the members that only judge still
    train* (the Word importance tab enables Explain as soon as members are stored). The path ends
    at the z-plot; when the whole ensemble is trained is printed beside it.
    """
    import threading

    from engine.attribution import attribute_ensemble
    from engine.attribution.explain import explain_example
    from engine.attribution.explainers import default_explainers
    from engine.demo import DEMO_DATASET, ensure_demo_project
    from engine.models import default_ensemble, list_models, train_ensemble
    from engine.models.loading import clear_cache
    from engine.stats.analysis import analyse_dataset
    from engine.store import Project

    stages: dict[str, float] = {}
    t = time.perf_counter()
    path = ensure_demo_project(workdir / preset / "demo.cbproj")
    project = Project.open(path)
    dataset = next(d for d in project.datasets() if d.name == DEMO_DATASET)
    stages["open"] = time.perf_counter() - t
    try:
        overrides = {} if rows is None else {"max_train_rows": rows, "max_dev_rows": max(50, rows // 4)}
        config = default_ensemble(f"{preset}:", backbones=members, preset=preset, **overrides)

        def progress(fraction: float, message: str) -> None:
            print(f"\r  [{preset}] {fraction:6.1%} {message[:90]:<90}", end="", file=sys.stderr, flush=True)

        outcome: dict = {}

        def train() -> None:
            try:
                outcome["result"] = train_ensemble(project, dataset.id, config, progress=progress)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
                outcome["error"] = exc
            outcome["seconds"] = time.perf_counter() - t

        # the members the app explains with once the whole ensemble is stored (a top-layer member only judges)
        explaining = {m.name for m in default_explainers(
            [SimpleNamespace(name=s.name, strategy=s.train.strategy) for s in config.members])}
        t = time.perf_counter()
        trainer = threading.Thread(target=train, name="train", daemon=True)
        trainer.start()
        while trainer.is_alive() and not explaining <= {m.name for m in list_models(project)}:
            time.sleep(0.5)
        if "error" in outcome:
            raise outcome["error"]
        stages["train explainers"] = time.perf_counter() - t
        judging = trainer.is_alive()
        print(file=sys.stderr)
        row = next(r for r in project.iter_examples(dataset.id) if (r["split"] or "") == "dev")

        # the app's explain step: its default explainers and default budget, while the judges train
        infos = default_explainers([m for m in list_models(project) if m.name in set(config.names)])
        tag = " (judges training)" if judging else ""
        t1 = time.perf_counter()
        attribute_ensemble(project, [m.name for m in infos], dataset.id, methods=methods, example_ids=[int(row["id"])])
        stages["explain 1 row" + tag] = time.perf_counter() - t1

        t1 = time.perf_counter()
        explained = explain_example(project, row, infos, methods)
        stages["vote/highlights" + tag] = time.perf_counter() - t1

        t1 = time.perf_counter()
        analyse_dataset(project, dataset.id)
        stages["z-statistics" + tag] = time.perf_counter() - t1
        trainer.join()
        print(file=sys.stderr)
        if "error" in outcome:
            raise outcome["error"]
        result = outcome["result"]
        accuracy = {m.model.backbone: m.dev_accuracy for m in result.members}
        seconds = {m.model.backbone: m.seconds for m in result.members}
        return {"stages": stages, "accuracy": accuracy, "member_seconds": seconds, "explained": explained,
                "ensemble": outcome["seconds"], "explainers": [m.model.backbone for m in result.members
                                                               if m.model.name in explaining]}
    finally:
        project.close()
        clear_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=None, help="train rows per member (default: all 3,414)")
    parser.add_argument("--members", default="minilm-l6,minilm-l3,mpnet-base", help="comma-separated backbones")
    parser.add_argument("--presets", default="sample-cpu,top-cpu,fast-cpu", help="comma-separated presets to compare")
    parser.add_argument("--full-members", default=None,
                        help="backbones for the presets that fine-tune every weight (default: --members)")
    parser.add_argument("--methods", default=None,
                        help="attribution methods of the explain step (default: the panel's default, ig)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None, help="where the projects go (default: a temp dir)")
    args = parser.parse_args()

    import torch

    from engine.attribution.vote_store import DEFAULT_METHODS

    torch.set_num_threads(args.threads)
    members = [m.strip() for m in args.members.split(",") if m.strip()]
    full_members = [m.strip() for m in (args.full_members or args.members).split(",") if m.strip()]
    methods = tuple(m.strip() for m in args.methods.split(",")) if args.methods else DEFAULT_METHODS
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="demo-path-"))
    os.environ.setdefault("COUNTERBIAS_HOME", str(workdir / "home"))
    print(f"demo path: members {members} (full fine-tuning: {full_members}), rows {args.rows or 'all'}, "
          f"{args.threads} threads, presets {presets}, explain with {list(methods)}")
    print(f"projects in {workdir}\n")

    results = {p: run_preset(p, members if p in CPU_PRESETS else full_members, args.rows, workdir, methods)
               for p in presets}

    stage_names = list(dict.fromkeys(s for p in presets for s in results[p]["stages"]))
    width = max(len(s) for s in stage_names) + 2
    print(f"\n{'stage':<{width}}" + "".join(f"{p:>14}" for p in presets))
    for stage in stage_names:
        print(f"{stage:<{width}}" + "".join(f"{results[p]['stages'][stage]:>13.1f}s" if stage in results[p]["stages"]
                                          else f"{'-':>14}" for p in presets))
    totals = {p: sum(results[p]["stages"].values()) for p in presets}
    print(f"{'path (to the z-plot)':<{width}}" + "".join(f"{totals[p]:>13.1f}s" for p in presets))
    print(f"{'whole ensemble trained':<{width}}"
          + "".join(f"{results[p]['stages']['open'] + results[p]['ensemble']:>13.1f}s" for p in presets))
    # open + every member + the same stages after it
    sequential = {p: results[p]["ensemble"] + totals[p] - results[p]["stages"]["train explainers"] for p in presets}
    print(f"{'path, row explained after every member':<{width}}" + "".join(f"{sequential[p]:>13.1f}s" for p in presets))
    print("(explaining members train first; the stages marked 'judges training' ran while the others trained,"
          " sharing the cores)")
    print(f"\n{'member':<18}" + "".join(f"{p + ' acc':>16}{'s':>8}" for p in presets))
    for m in dict.fromkeys([*members, *full_members]):
        print(f"{m:<18}" + "".join(f"{results[p]['accuracy'][m]:>16.1%}{results[p]['member_seconds'][m]:>8.0f}"
                                   if m in results[p]["accuracy"] else f"{'-':>16}{'-':>8}" for p in presets))

    full = [p for p in presets if p not in CPU_PRESETS]
    for cpu in [p for p in presets if p in CPU_PRESETS]:
        total = totals[cpu]
        print(f"\ngoal: {cpu} path <= {GOAL_SECONDS / 60:.0f} min: {total / 60:.1f} min "
              f"-> {'met' if total <= GOAL_SECONDS else 'NOT met'}"
              + ("" if args.rows is None else " (small run: not the goal's size)"))
        if full:
            best_cpu = max(results[cpu]["accuracy"].values())
            best_full = max(results[full[0]]["accuracy"].values())
            gap = (best_full - best_cpu) * 100
            print(f"goal: {cpu}'s best member within {GOAL_POINTS:.0f} points of {full[0]}: {best_cpu:.1%} vs "
                  f"{best_full:.1%} ({gap:+.1f} points behind) -> {'met' if gap <= GOAL_POINTS else 'NOT met'}")

if __name__ == "__main__":
    main()
