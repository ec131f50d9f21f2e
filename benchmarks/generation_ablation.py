"""Which stages of the edit method earn their requests: each stage off in turn, and the minimal pipeline.

The reviews, members and vote are those of ``coba_quality.py`` (same options: ``--reviews 50 --seed 34`` is a
seeded sample of CAD dev reviews of ordinary length). Each variant is the product's default
:class:`~engine.counterbias.GenerateSettings` with the options of one stage turned off (see ``VARIANTS``);
``minimal`` turns every optional stage off (select the sentences with principal words → edit → check → the
first try's one repair); ``seed+1`` is the default again with the next LLM seed: how far two runs of the same
pipeline differ (the noise of the LLM's sampling). ``no-demos`` is the default without demonstrations (the prompts'
invented examples); it differs from ``default`` only in a project holding demonstration pairs (``--demo-pairs``). The LLM answers variants share come from the project's cache,
so a variant costs only the requests in which it differs.

Printed per variant, in one table: requests per review (every request the variant makes, cached or not),
seconds per review (estimated as if run alone: the variant's time per new request × its requests), the share of
reviews with a candidate, flip rates by the two independent judges of ``coba_quality.py`` (VADER and a TF-IDF
model trained on IMDb without any CAD review) and by the product's ensemble, spurious words kept, the word edit
distance to the original, the share of reviews whose candidate the accept rule passes, and that share with both
independent judges agreeing the label flipped. Beside each difference from ``default``: the 95 % interval of the
paired difference over reviews (2,000 bootstrap resamples). Per-review figures and candidates are written to
``--results`` (JSONL, one file per variant) so that a reader can recheck them.

Usage::

    nice -n 5 python benchmarks/generation_ablation.py --reviews 50 --seed 34
    python benchmarks/generation_ablation.py --reviews 2 --shortest --model smollm2-135m --members minilm-l3 \\
        --max-train-rows 200 --methods ig --project /tmp/abl/small.cbproj --variants default,minimal  # a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import coba_quality as cq  # noqa: E402  (the shared setup and judges)

_STAGE_OFF: dict[str, dict[str, object]] = {
    "polar": {"edit_polar": 0.0},  # read: sentences read as the original label are not added
    "opinion": {"edit_opinion": False, "edit_swap": False},  # mark (the swap needs it)
    "fresh": {"edit_fresh": False},
    "moved": {"edit_moved": 0.0},  # the repair of an edit that did not move
    "swap": {"edit_swap": False},
    "remove": {"edit_remove": False},
    "demos": {"demonstrations": 0},  # the prompts' invented examples (what a project without pairs gets)
}
#: name → the settings that differ from the default (``seed+1`` is resolved against the default seed).
VARIANTS: dict[str, dict[str, object]] = {
    "default": {},
    "minimal": {k: v for off in _STAGE_OFF.values() for k, v in off.items()},
    **{f"no-{name}": off for name, off in _STAGE_OFF.items()},
    "seed+1": {"seed": None},
}
DEFAULT_ORDER = ("default", "minimal", "no-demos", "no-opinion", "no-polar", "no-fresh", "no-moved",
                 "no-swap", "no-remove", "seed+1")
METRICS = ("made", "vader", "tfidf", "ensemble", "kept", "distance", "passes", "passes_flipped")


def variant_settings(base, name: str):
    """The settings of variant ``name``: the default with that variant's changes (``seed+1``: the next seed)."""
    from dataclasses import replace

    changes = dict(VARIANTS[name])
    if "seed" in changes:
        changes["seed"] = base.seed + 1
    return replace(base, **changes)


def bootstrap(diffs: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95 % interval of the mean of paired differences, by resampling reviews."""
    if not diffs:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def summarise(folders: list[Path]) -> int:
    """Print the table again from the per-review records of one run or of several parts of one run
    (``--from-records A B``: e.g. a run continued with ``--skip``), with how many reviews' candidates each variant
    changed against the default. Each variant is compared with the default over the reviews both have records of
    (``n``); its requests per review are the parts' figures weighted by their reviews."""
    weighted: dict[str, list[tuple[float, int]]] = {}
    records: dict[str, dict[int, dict]] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.jsonl")):
            lines = path.read_text(encoding="utf-8").splitlines()
            row = json.loads(lines[0])
            weighted.setdefault(path.stem, []).append((row["requests"], row["reviews"]))
            records.setdefault(path.stem, {}).update({json.loads(x)["example_id"]: json.loads(x) for x in lines[1:]})
    if "default" not in records:
        raise SystemExit(f"no default.jsonl in {', '.join(map(str, folders))}")
    ref = records["default"]
    print(f"{len(ref)} reviews in the default's records ({', '.join(map(str, folders))})")
    print(f"{'variant':<10}{'n':>4}{'req/rev':>9}{'changed':>9}{'made':>7}{'VADER':>7}{'TF-IDF':>8}{'ens.':>7}"
          f"{'kept':>7}{'dist':>7}{'passes':>8}")
    order = ["default", "minimal"] + sorted(v for v in records if v not in ("default", "minimal"))
    for name in (v for v in order if v in records):
        rec = records[name]
        ids = sorted(set(rec) & set(ref))

        def mean(key: str) -> float:
            vals = [rec[i][key] for i in ids if rec[i].get(key) is not None]
            return sum(vals) / len(vals) if vals else math.nan

        requests = sum(r * n for r, n in weighted[name]) / max(sum(n for _, n in weighted[name]), 1)
        changed = sum(rec[i].get("candidate") != ref[i].get("candidate") for i in ids)
        print(f"{name:<10}{len(ids):>4}{requests:>9.1f}{changed:>6}/{len(ids):<2}{mean('made'):>7.2f}"
              f"{mean('vader'):>7.2f}{mean('tfidf'):>8.2f}{mean('ensemble'):>7.2f}{mean('kept'):>7.2f}"
              f"{mean('distance'):>7.3f}{mean('passes'):>8.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    cq.add_setup_options(parser)
    parser.add_argument("--variants", default=",".join(DEFAULT_ORDER),
                        help=f"comma-separated variants, in the order run (default: all; known: {', '.join(VARIANTS)})")
    parser.add_argument("--batch", type=int, default=5,
                        help="reviews per round: every variant runs on a round before the next starts, and the table "
                        "is printed after each, so a run stopped early still compares every variant on the same "
                        "reviews (default 5; 0: all at once)")
    parser.add_argument("--results", type=Path, default=None,
                        help="folder for the per-review JSONL files (default: benchmarks/results/ablation-<seed>)")
    parser.add_argument("--demo-pairs", type=Path, default=None, metavar="FILE",
                        help="import these human pairs (CAD's paired TSV: Text, Sentiment, batch_id) as the dataset's "
                        "demonstrations first (importing again adds nothing); no-demos is then the pipeline without them")
    parser.add_argument("--remake", default="",
                        help="comma-separated variants whose stored candidates of the chosen reviews are deleted first "
                        "(their LLM answers stay cached): e.g. default, made before --demo-pairs, whose key is the same")
    parser.add_argument("--from-records", type=Path, nargs="+", default=None, metavar="FOLDER",
                        help="generate nothing: print the table from the per-review records of an earlier run (or "
                        "of its parts, several folders)")
    args = parser.parse_args()
    if args.from_records:
        return summarise(args.from_records)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")

    from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
    from engine.counterbias.manipulate import matched_words
    from engine.llm.config import LLMConfig

    setup = cq.prepare(args)
    project, dataset, members, ids = setup.project, setup.dataset, setup.members, setup.ids
    if args.demo_pairs:
        from engine.generation.demo_pairs import import_pairs

        done = import_pairs(project, dataset.id, args.demo_pairs, text_column="Text", label_column="Sentiment",
                            group_column="batch_id")
        print(f"demonstration pairs: {done.added} added ({done.read} read)", file=sys.stderr)
    for name in (v.strip() for v in args.remake.split(",") if v.strip()):
        key = variant_settings(GenerateSettings(), name).key()
        gone = project.writer.run(lambda conn, key=key: conn.execute(
            "DELETE FROM candidates WHERE json_extract(meta, '$.settings_key') = ? AND example_id IN "
            "(SELECT value FROM json_each(?))", (key, json.dumps(ids))).rowcount)
        print(f"{name}: {gone} stored candidates deleted, to be made again", file=sys.stderr)
    originals = setup.originals
    results = args.results or (cq.REPO / "benchmarks" / "results"
                               / f"ablation-{'shortest' if args.shortest else f'seed{args.seed}'}-{len(ids)}")
    results.mkdir(parents=True, exist_ok=True)
    tfidf = cq.tfidf_judge(setup.path.with_name("imdb_tfidf_judge.pkl"))
    targets = {i: ("Positive" if originals[i]["label"] == "Negative" else "Negative") for i in ids}
    config = LLMConfig(backend="local", model=args.model, concurrency=1,
                       options={"n_threads": args.threads} if args.threads else {})
    base = GenerateSettings()

    def measure(done_ids: list[int]) -> tuple[dict[str, dict], dict[str, dict[int, dict]]]:
        """Each variant's per-review records and its row, over the reviews every variant has been run on."""
        table: dict[str, dict] = {}
        per_review: dict[str, dict[int, dict]] = {}
        for name in names:
            settings = variant_settings(base, name)
            key = settings.key()
            rows = [r for r in candidate_rows(project, example_ids=done_ids) if r["meta"].get("settings_key") == key]
            first: dict[int, dict] = {}
            for r in rows:
                if r["status"] != "failed":
                    first.setdefault(int(r["example_id"]), r)
            passing = {int(r["example_id"]) for r in rows if r["status"] == "proposed" and r["scores"].get("passes")}
            made_ids = sorted(first)
            texts = [first[i]["text"] for i in made_ids]
            judged = {"vader": cq.vader_labels(texts) if texts else [],
                      "tfidf": list(tfidf.predict(texts)) if texts else [],
                      "ensemble": cq.ensemble_labels(project, members, texts) if texts else []}
            reviews: dict[int, dict] = {}
            for i in done_ids:
                rec: dict = {"example_id": i, "made": float(i in first), "passes": float(i in passing)}
                if i in first:
                    j = made_ids.index(i)
                    for judge, labels in judged.items():
                        rec[judge] = float(labels[j] == targets[i])
                    text = first[i]["text"]
                    keep = list(first[i]["meta"].get("keep_words") or [])
                    rec["kept_words"] = (len(matched_words(text, keep)) if keep else 0, len(keep))
                    rec["kept"] = rec["kept_words"][0] / len(keep) if keep else None
                    o = cq.words(originals[i]["text"])
                    rec["distance"] = cq.edit_distance(o, cq.words(text)) / max(len(o), 1)
                    rec["passes_flipped"] = float(i in passing and rec["vader"] == 1.0 and rec["tfidf"] == 1.0)
                    rec["candidate"] = text
                else:
                    rec["passes_flipped"] = 0.0
                    failed = [r for r in rows if int(r["example_id"]) == i]
                    rec["error"] = failed[0]["meta"].get("error") if failed else "no row"
                rec["original"] = originals[i]["text"]
                rec["target"] = targets[i]
                reviews[i] = rec
            per_review[name] = reviews
            cost = spent[name]
            total = cost["sent"] + cost["hits"]
            row = {"variant": name, "settings": {k: getattr(settings, k) for k in VARIANTS[name]}, "key": key,
                   "reviews": len(done_ids), "requests": total / len(done_ids), "new_requests": cost["sent"],
                   "seconds": cost["seconds"],
                   "requests_by_stage": {k: v / len(done_ids) for k, v in cost["stages"].items()},
                   "seconds_alone": cost["seconds"] / cost["sent"] * total / len(done_ids) if cost["sent"] else math.nan}
            for m in METRICS:
                vals = [r[m] for r in reviews.values() if r.get(m) is not None]
                row[m] = sum(vals) / len(vals) if vals else math.nan
            kept = [r["kept_words"] for r in reviews.values() if "kept_words" in r]
            row["kept"] = sum(k for k, _ in kept) / max(sum(t for _, t in kept), 1)
            table[name] = row
            with open(results / f"{name}.jsonl", "w", encoding="utf-8") as fh:
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                for rec in reviews.values():
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return table, per_review

    def print_table(table: dict[str, dict], per_review: dict[str, dict[int, dict]], done_ids: list[int], *,
                    final: bool) -> None:
        ids = done_ids

        def f(x: float, w: int = 6, d: int = 2) -> str:
            return f"{'–':>{w}}" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:{w}.{d}f}"

        print(f"\nAblation of the edit method on {len(ids)} CAD dev reviews "
              f"({'shortest' if args.shortest else f'seed {args.seed}'}; "
              f"{sum(len(cq.words(originals[i]['text'])) for i in ids) / len(ids):.0f} words on average), "
              f"model {args.model}, members {', '.join(members)}")
        head = ["req/rev", "s/rev", "made", "VADER", "TF-IDF", "ens.", "kept", "dist", "passes", "pass+flip"]
        print(f"{'variant':<10}" + "".join(f"{h:>10}" for h in head))
        for name, row in table.items():
            cells = [f(row["requests"], 10, 1), f(row["seconds_alone"], 10, 0), f(row["made"], 10), f(row["vader"], 10),
                     f(row["tfidf"], 10), f(row["ensemble"], 10), f(row["kept"], 10), f(row["distance"], 10, 3),
                     f(row["passes"], 10), f(row["passes_flipped"], 10)]
            print(f"{name:<10}" + "".join(cells))
        print("\nRequests per review by stage (cached answers included):")
        for name, row in table.items():
            print(f"{name:<10}" + "  ".join(f"{k} {v:.1f}" for k, v in row.get("requests_by_stage", {}).items()))
        if "default" in per_review:
            print("\nDifference from default, with the 95 % bootstrap interval over reviews (paired):")
            print(f"{'variant':<10}" + "".join(f"{m:>22}" for m in ("vader", "tfidf", "ensemble", "passes_flipped", "distance")))
            ref = per_review["default"]
            for name, reviews in per_review.items():
                if name == "default":
                    continue
                cells = []
                for m in ("vader", "tfidf", "ensemble", "passes_flipped", "distance"):
                    diffs = [reviews[i][m] - ref[i][m] for i in ids
                             if reviews[i].get(m) is not None and ref[i].get(m) is not None]
                    lo, hi = bootstrap(diffs)
                    mean = sum(diffs) / len(diffs) if diffs else math.nan
                    cells.append(f"{f(mean, 6)} [{f(lo, 5)},{f(hi, 5)}]")
                print(f"{name:<10}" + "".join(f"{c:>22}" for c in cells))
        sys.stdout.flush()

    batches = [ids[k:k + args.batch] for k in range(0, len(ids), args.batch)] if args.batch else [ids]
    spent = {name: {"sent": 0, "hits": 0, "seconds": 0.0, "stages": {}} for name in names}
    done: list[int] = []
    for batch in batches:
        for name in names:
            settings = variant_settings(base, name)
            t0 = time.perf_counter()
            result = generate_counterbias(project, dataset.id, batch, config, vote_set_id=setup.vote.vote_set_id,
                                          settings=settings)
            spent[name]["seconds"] += time.perf_counter() - t0
            spent[name]["sent"] += result.sent
            spent[name]["hits"] += result.cache_hits
            for stage, n in result.requests_by_stage.items():
                spent[name]["stages"][stage] = spent[name]["stages"].get(stage, 0) + n
        done.extend(batch)
        table, per_review = measure(done)
        print_table(table, per_review, done, final=batch is batches[-1])

    print(f"per-review records: {results}/")
    project.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
