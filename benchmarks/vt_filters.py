"""Pattern-keeping counterfactuals (issue 14): LFR, SLFR and PKR before and after each filter.

The variation-theory set of the active-learning simulation — ``imdb-fine``: 500 IMDb train
reviews (Maas et al. 2011), four rating classes (very negative 1-2, negative 3-4, positive 7-8,
very positive 9-10), seed 0 — gets symbolic patterns synthesized per label
(:func:`engine.patterns.synthesis.synthesize_dataset`). For the ``--examples`` shortest reviews
that one of their label's patterns matches, :func:`engine.counterbias.variation.generate_variations`
asks the bundled local LLM for phrases that keep the pattern and fit each other label, then for a
minimal edit holding one of them (one repair request when the checks fail).

Stages, as the paper (Gebreegziabher et al.) filters its counterfactuals:

``generated``  every edit the LLM returned (the answer after the one repair, failures included)
``heuristic``  those the string checks accept (prompt echo, refusal, bare label, comment,
               formatting, truncation, copy, few-shot leak)
``symbolic``   those whose text still matches the example's pattern (PKR = 1 from here)
``judge``      those the discriminator labels with the target label

At each stage: LFR (the judge gives the target label), SLFR (the judge no longer gives the
original label) and PKR (the pattern still matches). The judge is independent of the project:
a TF-IDF logistic regression trained on the other IMDb train reviews with the same four classes
(its accuracy on the 500 originals is printed); for a premise/hypothesis dataset (CAD NLI built
by ``al-data cad-nli --mode pair``), a logistic regression on MiniLM pair features trained on
every CAD NLI train pair — original or human revision — whose premise is not in the project. Counts of "cannot" answers and phrase failures are
printed too. The project in ``--out`` is kept: a rerun sends no request already answered.

Run: ``nice -n 10 python benchmarks/vt_filters.py [--examples 8] [--model qwen2.5-coder-1.5b]``.
``--project P [--dataset NAME]`` measures the pattern-keeping candidates already in a project (e.g. those the
active-learning simulation made with ``al-simulate --counterfactuals vt``) and generates nothing; of a pair
dataset the new hypotheses are measured (the premise kept).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = ROOT.parent / "shared" / "data"


def tfidf_judge(train_gz: Path, exclude: set[str]):
    """A 4-class TF-IDF logistic regression on IMDb train reviews not in ``exclude`` (normalised text)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from engine.active.datasets import _clean, fine_label

    texts, labels = [], []
    with gzip.open(train_gz, "rt", encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        for row in reader:
            label = fine_label(int(row["rating"]))
            text = _clean(row["text"])
            if label and text.lower() not in exclude:
                texts.append(text)
                labels.append(label)
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=200_000),
                          LogisticRegression(max_iter=2000, C=4.0))
    model.fit(texts, labels)
    return model, len(texts)


def nli_judge(cad_nli: Path, exclude_premises: set[str], cache: Path | None = None):
    """A 3-class LR on MiniLM pair features, trained on the CAD NLI train pairs (originals and human revisions)
    whose premise is not in ``exclude_premises``; returns ``(model, n_train)``, ``model.predict([(p, h), …])``."""
    from engine.active.datasets import _read_tsv
    from engine.active.learners import make_learner

    texts, labels = [], []
    for folder in ("original", "revised_hypothesis"):
        for row in _read_tsv(cad_nli / folder / "train.tsv"):
            if row["sentence1"] not in exclude_premises:
                texts.append((row["sentence1"], row["sentence2"]))
                labels.append(row["gold_label"])
    learner = make_learner("embed-lr", **({"cache": cache} if cache else {}))
    learner.prepare(texts)
    return learner.fit(texts, labels, 0), len(texts)


def main() -> int:
    from engine.active.datasets import build_imdb_fine
    from engine.counterbias import candidate_rows
    from engine.counterbias.variation import VariationSettings, generate_variations, patterns_for
    from engine.io import ImportOptions, import_file
    from engine.llm.config import LLMConfig
    from engine.patterns.match import Matcher
    from engine.patterns.store import load_patterns
    from engine.patterns.synthesis import synthesize_dataset
    from engine.store import Project

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "vt-filters")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-words", type=int, default=120, help="only reviews of at most this many words")
    parser.add_argument("--project", type=Path, help="measure the vt candidates already in this project (no generation)")
    parser.add_argument("--dataset", default="imdb-fine", help="with --project: the dataset (4 rating classes)")
    args = parser.parse_args()
    if args.project:
        if not args.project.is_file():
            print(f"no project at {args.project}", file=sys.stderr)
            return 3
        with Project.open(args.project) as project:
            info = project.dataset(args.dataset)
            args.pair = info.task == "pair"
            rows = {int(r["id"]): dict(r) for r in project.iter_examples(info.id)}
            cands = [r for r in candidate_rows(project, example_ids=list(rows)) if r["method"] == "vt"]
        print(f"{args.project}: {len(cands)} pattern-keeping candidates of {len({c['example_id'] for c in cands})} "
              f"examples of {args.dataset!r}")
        return measure_filters(args, rows, cands, time.perf_counter())
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "vt.cbproj"
    started = time.perf_counter()
    log = lambda f, m="": print(f"\r[{f:6.1%}] {m[:100]:100}", end="", file=sys.stderr)  # noqa: E731
    project = Project.open(path) if path.exists() else Project.create(path)
    with project:
        if "imdb-fine" not in {d.name for d in project.datasets()}:
            built = build_imdb_fine(args.data / "imdb_maas" / "train.tsv.gz", args.out / "imdb-fine.csv", n=500, seed=0)
            import_file(project, built, options=ImportOptions(name="imdb-fine"))
        dataset = project.dataset("imdb-fine")
        rows = {int(r["id"]): dict(r) for r in project.iter_examples(dataset.id)}
        if not load_patterns(project, dataset.id):
            t0 = time.perf_counter()
            synthesize_dataset(project, dataset.id, progress=log)
            print(f"\npatterns synthesized in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        print("\nstored patterns (best 3 per label):")
        shown: dict[str, int] = {}
        for p in load_patterns(project, dataset.id):
            if shown.get(p.label, 0) < 3:
                shown[p.label] = shown.get(p.label, 0) + 1
                print(f"  {p.label:<14} P={p.precision or 0:.2f} R={p.recall or 0:.2f}  {p.pattern}")
        matcher = Matcher("embedding")
        short = {i: r for i, r in rows.items() if len(str(r["text"]).split()) <= args.max_words}
        chosen = patterns_for(project, dataset.id, short, matcher)
        # the shortest reviews with a pattern, balanced over the four labels
        by_label: dict[str, list[int]] = {}
        for i in sorted(chosen, key=lambda i: (len(str(rows[i]["text"]).split()), i)):
            by_label.setdefault(str(rows[i]["label"]), []).append(i)
        ids: list[int] = []
        while len(ids) < args.examples and any(by_label.values()):
            for label in sorted(by_label):
                if by_label[label] and len(ids) < args.examples:
                    ids.append(by_label[label].pop(0))
        print(f"\n{len(chosen)} of {len(short)} reviews of <= {args.max_words} words match a pattern of their label; "
              f"using {len(ids)} ({sum(len(str(rows[i]['text']).split()) for i in ids) / max(len(ids), 1):.0f} "
              "words on average)")
        config = LLMConfig(backend="local", model=args.model, concurrency=1,
                           params={"temperature": 0.0, "seed": 0},
                           options={"n_threads": args.threads} if args.threads else {})
        t0 = time.perf_counter()
        result = generate_variations(project, dataset.id, ids, config, settings=VariationSettings(targets="other"),
                                     progress=log)
        print(f"\ngeneration: {result.summary()} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        cands = [r for r in candidate_rows(project, example_ids=ids) if r["method"] == "vt"]
    return measure_filters(args, rows, cands, started)


def measure_filters(args: argparse.Namespace, rows: dict[int, dict], cands: list[dict], started: float) -> int:
    """Print LFR, SLFR and PKR of ``cands`` at each filter stage; write the edits as JSONL to ``--out``."""
    from engine.patterns.match import Matcher

    matcher = Matcher("embedding")
    args.out.mkdir(parents=True, exist_ok=True)
    pair = getattr(args, "pair", False)
    field = "hypothesis" if pair else "text"
    if pair:
        judge, n_train = nli_judge(args.data / "cad" / "NLI", {str(r["premise"]) for r in rows.values()},
                                   args.out / "nli_judge_embeddings.npz")
        originals = [(str(r["premise"]), str(r["hypothesis"])) for r in rows.values()]
        what, chance = f"embed-lr on {n_train:,} CAD NLI train pairs with other premises", 1 / 3
    else:
        exclude = {str(r["text"]).lower() for r in rows.values()}
        judge, n_train = tfidf_judge(args.data / "imdb_maas" / "train.tsv.gz", exclude)
        originals = [str(r["text"]) for r in rows.values()]
        what, chance = f"TF-IDF LR on {n_train:,} other IMDb train reviews", 0.25
    accuracy = sum(p == str(r["label"]) for p, r in zip(judge.predict(originals), rows.values(), strict=True))
    print(f"judge: {what}, accuracy on the {len(originals)} originals {accuracy / len(originals):.3f} "
          f"(chance {chance:.2f})")

    from engine.generation.reconstruct import clean_reconstruction

    items = []
    cannot = phrase_failures = 0
    for c in cands:
        meta = c["meta"]
        error = meta.get("error") or {}
        if c["status"] != "failed":
            text = c[field]
            heuristic_ok = True
        elif error.get("step") == "cannot":
            cannot += 1
            continue
        elif not meta.get("phrases"):
            phrase_failures += 1
            continue
        else:
            text, _ = clean_reconstruction(meta.get("raw") or "", str(rows[c["example_id"]][field]))
            heuristic_ok = "no longer matches the pattern" in (error.get("message") or "")
            if not text:
                phrase_failures += 1
                continue
        items.append({"id": c["id"], "example_id": c["example_id"], "original_label": meta["original_label"],
                      "target": c["target_label"], "pattern": meta["pattern"], "text": text,
                      "heuristic": heuristic_ok, "status": c["status"], "error": error.get("message")})
    if not items:
        print("no edits to measure")
        return 1
    predicted = judge.predict([(str(rows[it["example_id"]]["premise"]), it["text"]) if pair else it["text"]
                               for it in items])
    for it, p in zip(items, predicted, strict=True):
        it["judge"] = str(p)
        it["kept"] = matcher.matches(it["pattern"], it["text"])

    def measure(group: list[dict]) -> str:
        n = len(group)
        if not n:
            return f"{0:>4}      –      –      –"
        lfr = sum(it["judge"] == it["target"] for it in group) / n
        slfr = sum(it["judge"] != it["original_label"] for it in group) / n
        pkr = sum(it["kept"] for it in group) / n
        return f"{n:>4}  {lfr:5.2f}  {slfr:5.2f}  {pkr:5.2f}"

    stages = [("generated", items)]
    stages.append(("heuristic", [it for it in stages[-1][1] if it["heuristic"]]))
    stages.append(("symbolic", [it for it in stages[-1][1] if it["kept"]]))
    stages.append(("judge", [it for it in stages[-1][1] if it["judge"] == it["target"]]))
    pairs = len(cands)
    print(f"\n{pairs} (example, target) pairs: {cannot} answered CANNOT, {phrase_failures} without a usable phrase "
          f"or edit; {len(items)} edits measured")
    print(f"{'stage':<10} {'n':>4}  {'LFR':>5}  {'SLFR':>5}  {'PKR':>5}")
    for name, group in stages:
        print(f"{name:<10} {measure(group)}")
    out = args.out / "vt_filters.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps({**it, "original": str(rows[it["example_id"]][field]),
                                **({"premise": str(rows[it["example_id"]]["premise"])} if pair else {})},
                               ensure_ascii=False) + "\n")
    print(f"edits written to {out}; total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
