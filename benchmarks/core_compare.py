"""CORE vs the LLM-only edit on the same CAD dev reviews: flip rates, diversity, closeness (issue 13).

Set-up (kept in ``--out``; a rerun sends no request already answered and retrieves nothing again):

* dataset ``cad``: CAD sentiment originals (Kaushik et al. 2020), ``orig/train.tsv`` + ``orig/dev.tsv``
  as split ``dev``;
* member ``judge``: MiniLM-L6, quick-cpu preset (frozen encoder, head trained), on the train split;
* corpus ``imdb``: the sentences of the first ``--corpus-docs`` IMDb test reviews (Maas et al. 2011),
  labelled by ``judge``, flat FAISS index of MiniLM-L6 embeddings.

For ``--reviews`` CAD dev originals with a human revision (the shortest, or a seeded sample),
with the bundled local LLM (``--model``): CORE (:func:`engine.counterbias.retrieve_edit.core_edit`,
per-sentence retrieval, k = 5) and the LLM-only baseline (the same prompt without retrieval). The
human revisions of the same reviews are measured alongside. Per method: made / failed, flip
rates by the product's judge, by an independent TF-IDF logistic regression trained on IMDb train
reviews minus every CAD review and by VADER; diversity (self-BLEU-4 of the edits, distinct-1/2,
top-5 PC variance share) and closeness (word edit distance and MiniLM cosine to the original);
for CORE, the share of edits that use at least one offered keyword.

CoBA's edits of the same reviews come from ``benchmarks/coba_quality.py`` (its own project, its
ensemble and vote): ``--coba-jsonl`` reads the candidates file that run wrote (run it with the same
``--reviews`` and ``--shortest``/``--seed`` choice; reviews are matched by their text) and measures
them here with the same judges and diversity figures.

Run: ``nice -n 10 python benchmarks/core_compare.py --reviews 50 --shortest [--coba-jsonl FILE]``.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = ROOT.parent / "shared" / "data"
CAD = DATA / "cad" / "sentiment"


def main() -> int:
    from coba_quality import PAIRED_DEV, norm_text, read_tsv, tfidf_judge, vader_labels

    from engine.counterbias import candidate_rows
    from engine.counterbias.retrieve_edit import RetrievalSettings, core_edit
    from engine.counterbias.guided import GuidedSettings, generate_guided
    from engine.evaluation.diversity_report import pair_diversity
    from engine.io.importer import ImportOptions, import_file
    from engine.llm.config import LLMConfig
    from engine.models import MemberSpec, train_member, train_preset
    from engine.models.predict import predict
    from engine.models.store import list_models
    from engine.retrieval.corpus import import_corpus, label_corpus, list_corpora
    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import build_index
    from engine.store import ExampleQuery, Project

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "core-compare")
    parser.add_argument("--reviews", type=int, default=50)
    parser.add_argument("--shortest", action="store_true", help="the shortest reviews instead of a seeded sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus-docs", type=int, default=3000)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--coba-jsonl", type=Path, default=None,
                        help="candidates of benchmarks/coba_quality.py on the same reviews (its --out)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = lambda f, m="": print(f"\r[{f:6.1%}] {m[:100]:100}", end="", file=sys.stderr)  # noqa: E731
    started = time.perf_counter()
    path = args.out / "core.cbproj"
    project = Project.open(path) if path.exists() else Project.create(path)
    with project:
        if "cad" not in {d.name for d in project.datasets()}:
            train = import_file(project, CAD / "orig" / "train.tsv", options=ImportOptions(name="cad"))
            import_file(project, CAD / "orig" / "dev.tsv", options=ImportOptions(append_to=train.dataset.id,
                                                                                   split="dev"))
        dataset = project.dataset("cad")
        if "judge" not in {m.name for m in list_models(project)}:
            t0 = time.perf_counter()
            spec = MemberSpec("judge", "minilm-l6", {}, train_preset("quick-cpu", max_length=128))
            trained = train_member(project, dataset.id, spec, progress=log)
            print(f"\nmember judge trained in {time.perf_counter() - t0:.0f} s, dev accuracy "
                  f"{getattr(trained, 'dev_accuracy', float('nan')):.3f}", file=sys.stderr)
        if "imdb" not in {c.name for c in list_corpora(project)}:
            t0 = time.perf_counter()
            import_corpus(project, "imdb", DATA / "imdb_maas" / "test.tsv.gz", limit_docs=args.corpus_docs,
                          progress=log)
            label_corpus(project, "imdb", "judge", progress=log)
            build_index(project, "imdb", make_encoder("minilm-l6"), kind="flat", progress=log)
            print(f"\ncorpus imported, labelled and indexed in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        corpus = next(c for c in list_corpora(project) if c.name == "imdb")

        pairs = read_tsv(PAIRED_DEV)
        revision_of = {norm_text(pairs[k]["Text"]): pairs[k + 1]["Text"] for k in range(0, len(pairs) - 1, 2)}
        dev = project.examples(project.example_ids(ExampleQuery(dataset.id, splits=("dev",))))
        usable = [r for r in dev if norm_text(r["text"]) in revision_of
                  and norm_text(revision_of[norm_text(r["text"])]) != norm_text(r["text"])]
        if args.shortest:
            chosen = sorted(usable, key=lambda r: (len(r["text"]), r["id"]))[: args.reviews]
        else:
            chosen = sorted(random.Random(args.seed).sample(usable, min(args.reviews, len(usable))),
                            key=lambda r: r["id"])
        ids = [int(r["id"]) for r in chosen]
        originals = {int(r["id"]): r for r in chosen}
        print(f"\n{len(ids)} CAD dev reviews, {sum(len(r['text'].split()) for r in chosen) / len(ids):.0f} words on "
              f"average; corpus of {corpus.sentence_count:,} sentences", file=sys.stderr)
        config = LLMConfig(backend="local", model=args.model, concurrency=1, params={"temperature": 0.0, "seed": 0},
                           options={"n_threads": args.threads} if args.threads else {})
        timing = {}
        t0 = time.perf_counter()
        core = core_edit(project, dataset.id, ids, config, RetrievalSettings(corpus="imdb", model="judge", k=5,
                                                                              kind="flat"),
                         judge=["judge"], progress=log)
        timing["core"] = time.perf_counter() - t0
        print(f"\nCORE: {core.summary()}", file=sys.stderr)
        t0 = time.perf_counter()
        llm = generate_guided(project, dataset.id, ids, config, settings=GuidedSettings(method="llm"),
                              judge=["judge"], progress=log)
        timing["llm"] = time.perf_counter() - t0
        print(f"\nLLM-only: {llm.summary()}", file=sys.stderr)
        rows = candidate_rows(project, example_ids=ids)
        tfidf = tfidf_judge(args.out / "tfidf_judge.pkl")

        def judge_labels(texts: list[str]) -> list[str]:
            info = project.dataset(dataset.id)
            probs = predict(project, "judge", texts)
            return [info.labels[int(p.argmax())] if len(info.labels) == probs.shape[1] else "" for p in probs]

        groups = {}
        for method in ("core", "llm"):
            made = [r for r in rows if r["method"] == method and r["status"] != "failed"]
            failed = sum(1 for r in rows if r["method"] == method and r["status"] == "failed")
            groups[method] = (made, failed)
        other = {"Positive": "Negative", "Negative": "Positive"}
        human = [{"text": revision_of[norm_text(originals[i]["text"])], "example_id": i,
                  "target_label": other[originals[i]["label"]], "meta": {}} for i in ids]
        if args.coba_jsonl:
            import json

            by_text = {norm_text(originals[i]["text"]): i for i in ids}
            coba, coba_failed = [], 0
            with open(args.coba_jsonl, encoding="utf-8") as f:
                for line in f:
                    r = json.loads(line)
                    i = by_text.get(norm_text(r["original"]))
                    if i is None:
                        continue
                    if r.get("candidate"):
                        coba.append({"text": r["candidate"], "example_id": i, "target_label": r["target_label"],
                                     "meta": {}})
                    else:
                        coba_failed += 1
            missing = len(ids) - len({r["example_id"] for r in coba}) - coba_failed
            print(f"CoBA (from {args.coba_jsonl.name}): {len(coba)} made, {coba_failed} failed"
                  + (f", {missing} of these reviews not in that file" if missing else ""), file=sys.stderr)
            groups["coba"] = (coba, coba_failed)
        groups["human"] = (human, 0)

        print(f"\n{'method':<8} {'made':>4} {'fail':>4}  {'judge':>5} {'tfidf':>5} {'vader':>5}  {'sBLEU':>5} "
              f"{'dist1':>5} {'dist2':>5} {'PC5':>5}  {'edit':>5} {'cos':>5}  {'kw':>4}  s/edit")
        for method, (made, failed) in groups.items():
            if len(made) < 2:
                print(f"{method:<8} {len(made):>4} {failed:>4}  (too few to measure)")
                continue
            texts = [r["text"] for r in made]
            parents = [originals[r["example_id"]]["text"] for r in made]
            targets = [r["target_label"] for r in made]
            d = pair_diversity(texts, parents)
            rate = lambda labels: sum(a == b for a, b in zip(labels, targets, strict=True)) / len(targets)  # noqa: E731
            kw = ""
            if method == "core":
                used = 0
                for r in made:
                    words = [w.lower() for w in ((r["meta"].get("guide") or {}).get("keywords") or [])]
                    orig = set(re.findall(r"\w+", originals[r["example_id"]]["text"].lower()))
                    new = set(re.findall(r"\w+", r["text"].lower()))
                    used += any(w in new and w not in orig for w in words)
                kw = f"{used / len(made):4.2f}"
            secs = f"{timing[method] / max(len(made) + failed, 1):5.1f}" if method in timing else "    –"
            print(f"{method:<8} {len(made):>4} {failed:>4}  {rate(judge_labels(texts)):5.2f} "
                  f"{rate(list(tfidf.predict(texts))):5.2f} {rate(vader_labels(texts)):5.2f}  {d.self_bleu:5.3f} "
                  f"{d.distinct_1:5.3f} {d.distinct_2:5.3f} {d.pc_share:5.3f}  {d.edit_distance:5.3f} "
                  f"{d.cosine:5.3f}  {kw:>4}  {secs}")
        parents = [originals[i]["text"] for i in ids]
        acc = lambda labels: sum(a == originals[i]["label"] for a, i in zip(labels, ids, strict=True)) / len(ids)  # noqa: E731
        print(f"judges on the originals: judge {acc(judge_labels(parents)):.2f}, tfidf "
              f"{acc(list(tfidf.predict(parents))):.2f}, vader {acc(vader_labels(parents)):.2f}")
        with open(args.out / "core_compare.tsv", "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, delimiter="\t")
            w.writerow(["method", "example_id", "target", "original", "edit", "keywords"])
            for method, (made, _) in groups.items():
                for r in made:
                    w.writerow([method, r["example_id"], r["target_label"], originals[r["example_id"]]["text"],
                                r["text"], ", ".join((r["meta"].get("guide") or {}).get("keywords") or [])])
    print(f"edits written to {args.out / 'core_compare.tsv'}; total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
