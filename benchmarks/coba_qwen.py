"""CoBA with the bundled Qwen2.5-Coder-1.5B on CPU: 20 short CAD dev reviews, flip rates.

Needs a project whose dataset holds CAD dev reviews (split ``dev``) and a trained ensemble,
e.g. the demo project after ``counterbias train <demo> "CAD sentiment (demo)" --max-train-rows 320``.
It votes on the 20 shortest dev reviews (IG, LIME, Shapley), generates one candidate per review with the
local model, judges them with the ensemble and with VADER (an independent rule-based judge),
and prints the label-flip rates and three examples. Everything is stored in the project, so a
rerun costs nothing but the judges.

    python benchmarks/coba_qwen.py PROJECT [--dataset NAME] [--n 20] [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def vader_label(text: str) -> str:
    from vader import SentimentIntensityAnalyzer

    return "Positive" if SentimentIntensityAnalyzer().polarity_scores(text)["compound"] >= 0 else "Negative"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("--dataset", default="CAD sentiment (demo)")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--methods", default="ig,lime,shapley", help="attribution methods of the vote")
    args = parser.parse_args()

    from engine.attribution import VoteSettings, find_principal_words
    from engine.cli.progress import StderrProgress
    from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
    from engine.llm.config import LLMConfig
    from engine.models import list_models
    from engine.store import ExampleQuery, Project

    progress = StderrProgress()
    with Project.open(args.project) as project:
        dataset = project.dataset(args.dataset)
        dev = project.examples(project.example_ids(ExampleQuery(dataset.id, splits=("dev",))))
        chosen = sorted(dev, key=lambda r: (len(r["text"]), r["id"]))[: args.n]
        ids = [int(r["id"]) for r in chosen]
        members = [m.name for m in list_models(project) if m.dataset_id == dataset.id
                   and m.params.get("spec", {}).get("inputs", "auto") == "auto"]
        accuracy = {m.name: m.metrics.get("dev_accuracy", 0.0) for m in list_models(project) if m.name in members}
        print("members: " + ", ".join(f"{name} ({acc:.3f})" for name, acc in accuracy.items()), file=sys.stderr)
        t0 = time.perf_counter()
        find_principal_words(project, dataset.id, members, methods={m: None for m in args.methods.split(",")}, vote=VoteSettings(k=5),
                             wordlists=("gender",), example_ids=ids, progress=progress)
        t_vote = time.perf_counter() - t0
        config = LLMConfig(backend="local", model=args.model, concurrency=1,
                           params={"temperature": 0.0, "max_tokens": 384, "seed": 0},
                           options={"n_threads": args.threads})
        t0 = time.perf_counter()
        result = generate_counterbias(project, dataset.id, ids, config, chunk_size=4, progress=progress,
                                      settings=GenerateSettings(temperature=0.0, drop_prob=0.0))
        t_gen = time.perf_counter() - t0
        rows = candidate_rows(project, example_ids=ids)
        originals = {r["id"]: r for r in chosen}
    made = [r for r in rows if r["status"] != "failed"]
    ens = sum(r["scores"]["judge"]["flipped"] for r in made)
    soft = sum(r["scores"]["judge"]["left_original"] for r in made)
    vader = sum(vader_label(r["text"]) == r["target_label"] for r in made)
    vader_orig = sum(vader_label(originals[r["example_id"]]["text"]) == originals[r["example_id"]]["label"] for r in made)
    kept = sum(bool(r["scores"].get("spurious_kept")) for r in made)
    n = len(made)
    print(json.dumps({
        "reviews": len(ids), "candidates": n, "failed": len(rows) - n,
        "ensemble_lfr": round(ens / max(n, 1), 3), "ensemble_slfr": round(soft / max(n, 1), 3),
        "vader_flip_rate": round(vader / max(n, 1), 3), "vader_accuracy_on_originals": round(vader_orig / max(n, 1), 3),
        "spurious_kept": round(kept / max(n, 1), 3), "vote_s": round(t_vote, 1), "generate_s": round(t_gen, 1),
        "tokens": result.usage.to_dict(), "requests_sent": result.sent,
    }, indent=2))
    for r in made[:3]:
        steps = r["meta"]["fields"][0]
        print("\n---", originals[r["example_id"]]["label"], "->", r["target_label"],
              "| ensemble:", r["scores"]["judge"]["predicted"], "| VADER:", vader_label(r["text"]))
        print("ORIGINAL:", originals[r["example_id"]]["text"])
        print("TRIPLES: ", [" | ".join(t) + f" [{c}]" for t, c in zip(steps["triples"], steps["categories"])])
        print("REWRITTEN:", [" | ".join(t) for t in steps["rewritten"]])
        print("CANDIDATE:", r["text"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
