"""Exact vs IVF (vs HNSW) search over real MiniLM embeddings of IMDb sentences: build time, queries/s, recall@10, memory.

Corpus: the sentences of the IMDb reviews (``../shared/data/imdb_maas``, train then test; about
560k after deduplication), imported into a project in ``--cache`` with the engine's corpus import
(:func:`engine.retrieval.corpus.import_corpus`) and embedded with the bundled MiniLM-L6 bi-encoder
(:func:`engine.retrieval.vectors.build_vectors`, 64 tokens). Both steps resume, so the embeddings
are computed once: a rerun, or a run with another ``--limit``, reuses them. ``--limit N`` uses the
first N sentences (imported and embedded as needed).

Queries: sentences of the CAD sentiment dev and test reviews (originals and revisions; what CORE
retrieves for), embedded once and cached. They are not in the corpus (CAD test/dev originals were
removed from Maas train, though a few sentences recur across reviews).

For each index: build time (training included), queries/s over all queries in one batched search
(FAISS uses every core it is given; ``--threads``), recall@10 against the exact top-10, and the
index's memory (its serialised size; the flat index is the embedding matrix itself). IVF is swept
over ``--nprobe`` values; the closing line names the fastest setting with recall@10 >= 0.95 and its
speed-up over exact search.

Usage::

    nice -n 19 python benchmarks/retrieval.py --cache ~/cb-retrieval            # the whole corpus
    nice -n 19 python benchmarks/retrieval.py --cache /tmp/r --limit 20000 --hnsw
    python benchmarks/retrieval.py --cache /tmp/r --limit 300000 --prepare-only  # import + embed only
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATA = REPO.parent / "shared" / "data"
ENCODER = "minilm-l6"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def progress_printer(label: str):
    last = [0.0]

    def report(fraction: float, message: str = "") -> None:
        now = time.monotonic()
        if fraction >= 1.0 or now - last[0] > 30:
            last[0] = now
            log(f"{label} {fraction * 100:5.1f}% {message}")

    return report


def prepare_corpus(project, data: Path, limit: int | None) -> int:
    """Import IMDb sentences until the corpus holds ``limit`` (all when ``None``); returns the count."""
    from engine.retrieval.corpus import get_corpus, import_corpus, list_corpora

    files = [data / "imdb_maas" / "train.tsv.gz", data / "imdb_maas" / "test.tsv.gz"]
    have = get_corpus(project, "imdb").sentence_count if any(c.name == "imdb" for c in list_corpora(project)) else 0
    for path in files:
        docs = 0
        while limit is None or have < limit:
            docs += 2000
            result = import_corpus(project, "imdb", path, limit_docs=docs, batch_docs=500)
            have = result.corpus.sentence_count
            log(f"corpus: {path.name} up to document {docs:,}: {have:,} sentences")
            if result.finished:
                break
        if limit is not None and have >= limit:
            break
    return have


def cad_queries(data: Path, n: int) -> list[str]:
    from engine.text.sentences import split_sentences

    out: list[str] = []
    seen: set[str] = set()
    for part in ("dev", "test"):
        path = data / "cad" / "sentiment" / "combined" / f"{part}.tsv"
        if not path.exists():
            continue
        with open(path, newline="", encoding="utf-8") as f:
            for row in list(csv.reader(f, delimiter="\t"))[1:]:
                for sentence in split_sentences(row[1]):
                    if sentence not in seen and len(sentence.split()) >= 4:
                        seen.add(sentence)
                        out.append(sentence)
    rng = np.random.default_rng(0)
    pick = rng.choice(len(out), size=min(n, len(out)), replace=False)
    return [out[i] for i in sorted(pick)]


def index_bytes(index) -> int:
    import faiss

    return int(faiss.serialize_index(index).nbytes)


def timed_search(index, queries: np.ndarray, k: int, repeats: int = 2) -> tuple[float, np.ndarray]:
    """Best-of-``repeats`` queries/s of one batched search, and its ids."""
    best = math.inf
    ids = None
    for _ in range(repeats):
        started = time.perf_counter()
        _, ids = index.search(queries, k)
        best = min(best, time.perf_counter() - started)
    return len(queries) / best, ids


def recall(truth: np.ndarray, found: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(t) & set(f)) / k for t, f in zip(truth, found, strict=True)]))


def mmr_report(project_path: Path, exact, vectors: np.ndarray, queries: np.ndarray, weights: list[float],
               n_queries: int = 300, pool: int = 20, k: int = 5) -> list[dict]:
    """How alike the 5 excerpts are with the plain top-5 and with MMR picks (what CORE's editor gets)."""
    from engine.retrieval.corpus import get_corpus, sentences_at
    from engine.retrieval.keywords import extract_keywords
    from engine.retrieval.retrieve import mmr_select
    from engine.store import Project

    qs = queries[:n_queries]
    _, ids = exact.search(np.ascontiguousarray(qs, dtype=np.float32), pool)
    with Project.open(project_path) as project:
        corpus_id = get_corpus(project, "imdb").id
        texts = {int(p): t for p, t in zip(sorted({int(i) for i in ids.ravel() if i >= 0}),
                                            sentences_at(project, corpus_id, sorted({int(i) for i in ids.ravel()
                                                                                      if i >= 0})), strict=True)}
    out = []
    for weight in [0.0, *weights]:
        rel, pair, dup, words = [], [], [], []
        for q, row in zip(qs, ids, strict=True):
            cand = [int(i) for i in row if i >= 0]
            picked = [cand[j] for j in mmr_select(q, vectors[cand], k, weight)]
            v = vectors[picked]
            sims = v @ v.T
            upper = sims[np.triu_indices(len(picked), 1)]
            rel.append(float(np.mean(v @ q)))
            pair.append(float(np.mean(upper)))
            dup.append(float(np.mean(upper > 0.9)))
            words.append(len(extract_keywords([texts[p] for p in picked], max_words=50)))
        out.append({"diversity": weight, "queries": len(qs), "relevance": float(np.mean(rel)),
                    "pairwise": float(np.mean(pair)), "near_duplicates": float(np.mean(dup)),
                    "keywords": float(np.mean(words))})
        log(f"mmr {weight:g}: cos to query {out[-1]['relevance']:.3f}, between excerpts {out[-1]['pairwise']:.3f}, "
            f"near-duplicate pairs {out[-1]['near_duplicates']:.3f}, keywords {out[-1]['keywords']:.1f}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="folder for the project, embeddings and results")
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--limit", type=int, help="use the first N sentences (default: all)")
    parser.add_argument("--queries", type=int, default=1000, help="CAD query sentences (default 1000)")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--nlist", type=int, help="IVF clusters (default about 4·√n, a power of two)")
    parser.add_argument("--nprobe", default="4,8,16,32,48,64,96,128", help="IVF nprobe values to sweep")
    parser.add_argument("--train-size", type=int, help="IVF training sample (default 64·nlist)")
    parser.add_argument("--ivfpq", action="store_true",
                        help="also IVF-PQ (48 codes of 8 bits; exact re-ranking of --rerank x k candidates from the "
                             "embeddings, which stay on disk)")
    parser.add_argument("--rerank", type=int, default=4, help="IVF-PQ: candidates re-scored per result (default 4)")
    parser.add_argument("--hnsw", action="store_true", help="also HNSW (m 32, ef_construction 80; ef_search sweep)")
    parser.add_argument("--ef-search", default="32,64,128,256", help="HNSW efSearch values to sweep")
    parser.add_argument("--threads", type=int, help="FAISS threads (default: all)")
    parser.add_argument("--prepare-only", action="store_true", help="import and embed, then stop")
    parser.add_argument("--mmr", default="0.3,0.5",
                        help="maximal-marginal-relevance weights compared with the plain top-5 (label-free: "
                             "top-20 exact neighbours per query, 5 picked); empty to skip")
    args = parser.parse_args(argv)

    import faiss

    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import make_kind
    from engine.retrieval.vectors import build_vectors, encoded_prefix
    from engine.store import Project

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    args.cache.mkdir(parents=True, exist_ok=True)
    path = args.cache / "retrieval-bench.cbproj"
    project = Project.open(path) if path.exists() else Project.create(path)
    encoder = make_encoder(ENCODER, max_length=64)
    try:
        started = time.perf_counter()
        total = prepare_corpus(project, args.data, args.limit)
        log(f"corpus ready: {total:,} sentences ({time.perf_counter() - started:.0f} s)")
        n = total if args.limit is None else min(args.limit, total)
        started = time.perf_counter()
        done_before = len(encoded_prefix(project, "imdb", encoder.key))
        build_vectors(project, "imdb", encoder, limit=n, progress=progress_printer("embedding"))
        seconds = time.perf_counter() - started
        if n > done_before:
            log(f"embedded {n - done_before:,} sentences in {seconds:.0f} s ({(n - done_before) / seconds:.0f}/s)")
        if args.prepare_only:
            return 0
        vectors = np.ascontiguousarray(encoded_prefix(project, "imdb", encoder.key)[:n])
    finally:
        project.close()

    qfile = args.cache / f"queries-{args.queries}.npy"
    if qfile.exists():
        queries = np.load(qfile)
    else:
        queries = encoder.encode(cad_queries(args.data, args.queries))
        np.save(qfile, queries)
    k = args.k
    threads = faiss.omp_get_max_threads()
    log(f"{n:,} vectors x {vectors.shape[1]}, {len(queries):,} queries, k={k}, {threads} FAISS threads")

    rows: list[dict] = []

    def add_row(kind: str, setting: str, build_s: float, qps: float, rec: float, nbytes: int) -> None:
        rows.append({"index": kind, "setting": setting, "build_s": round(build_s, 2), "qps": round(qps, 1),
                     "recall_at_10": round(rec, 4), "memory_mb": round(nbytes / 2**20, 1)})
        log(f"{kind:5s} {setting:28s} build {build_s:7.1f} s  {qps:9.1f} q/s  recall@{k} {rec:.3f}  "
            f"{nbytes / 2**20:7.1f} MB")

    started = time.perf_counter()
    exact = make_kind("flat", n).build(vectors)
    build_exact = time.perf_counter() - started
    exact_qps, truth = timed_search(exact, queries, k)
    add_row("flat", "exact", build_exact, exact_qps, 1.0, index_bytes(exact))
    weights = [float(w) for w in args.mmr.split(",") if w.strip()]
    mmr_rows = mmr_report(args.cache / "retrieval-bench.cbproj", exact, vectors, queries, weights) if weights else []
    del exact

    params = {"nlist": args.nlist, "train_size": args.train_size}
    if args.nprobe.strip():  # an empty --nprobe skips the IVF rows (e.g. a run for HNSW alone)
        kind = make_kind("ivf", n, {k_: v for k_, v in params.items() if v})
        started = time.perf_counter()
        ivf = kind.build(vectors, seed=0)
        build_ivf = time.perf_counter() - started
        built = kind.build_params(n)
        ivf_bytes = index_bytes(ivf)
        for nprobe in sorted({min(int(p), built["nlist"]) for p in args.nprobe.split(",") if p.strip()}):
            ivf.nprobe = nprobe
            qps, found = timed_search(ivf, queries, k)
            add_row("ivf", f"nlist {built['nlist']}, nprobe {nprobe}", build_ivf, qps, recall(truth, found), ivf_bytes)
        del ivf

    if args.ivfpq:
        from engine.retrieval.index import exact_rerank

        pkind = make_kind("ivfpq", n, {k_: v for k_, v in params.items() if v})
        started = time.perf_counter()
        pq = pkind.build(vectors, seed=0)
        build_pq = time.perf_counter() - started
        pbuilt = pkind.build_params(n)
        pq_bytes = index_bytes(pq)
        for nprobe in sorted({min(int(p), pbuilt["nlist"]) for p in args.nprobe.split(",") if p.strip()}):
            pq.nprobe = nprobe
            for rerank in (1, int(args.rerank)):
                best = math.inf
                for _ in range(2):
                    started = time.perf_counter()
                    _, ids = pq.search(queries, k * rerank)
                    found = ids if rerank == 1 else exact_rerank(queries, ids, vectors, k)[1]
                    best = min(best, time.perf_counter() - started)
                add_row("ivfpq", f"nlist {pbuilt['nlist']}, {pbuilt['codes']}×{pbuilt['nbits']} bit, nprobe {nprobe}, "
                                 f"rerank {rerank}", build_pq, len(queries) / best, recall(truth, found), pq_bytes)
        del pq

    if args.hnsw:
        hkind = make_kind("hnsw", n, {})
        started = time.perf_counter()
        hnsw = hkind.build(vectors, progress=progress_printer("hnsw"))
        build_h = time.perf_counter() - started
        h_bytes = index_bytes(hnsw)
        for ef in [int(e) for e in args.ef_search.split(",") if e.strip()]:
            hnsw.hnsw.efSearch = max(ef, k)
            qps, found = timed_search(hnsw, queries, k)
            add_row("hnsw", f"m 32, efSearch {ef}", build_h, qps, recall(truth, found), h_bytes)
        del hnsw

    good = [r for r in rows if r["index"] != "flat" and r["recall_at_10"] >= 0.95]
    best = max(good, key=lambda r: r["qps"]) if good else None
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"sentences": n, "queries": len(queries), "k": k, "threads": threads, "encoder": encoder.key,
              "rows": rows, "mmr": mmr_rows, "peak_rss_mb": round(peak_mb, 1),
              "best_at_recall_0.95": None if best is None else {**best, "speedup": round(best["qps"] / exact_qps, 2)}}
    (args.cache / f"results-{n}.json").write_text(json.dumps(result, indent=2))

    print(f"\n{n:,} IMDb sentences (MiniLM-L6, 384-d, unit vectors), {len(queries):,} CAD queries, k={k}, "
          f"{threads} FAISS threads\n")
    print("| index | setting | build s | queries/s | × exact | recall@10 | memory MB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['index']} | {r['setting']} | {r['build_s']:.1f} | {r['qps']:,.0f} | {r['qps'] / exact_qps:.1f} | "
              f"{r['recall_at_10']:.3f} | {r['memory_mb']:.1f} |")
    if mmr_rows:
        print(f"\nExcerpt diversity, 5 of the 20 exact neighbours of {mmr_rows[0]['queries']} queries (labels ignored):")
        print("| diversity | cos to query | cos between excerpts | near-duplicate pairs (cos > 0.9) | keywords/query |")
        print("|---:|---:|---:|---:|---:|")
        for r in mmr_rows:
            print(f"| {r['diversity']:g} | {r['relevance']:.3f} | {r['pairwise']:.3f} | {r['near_duplicates']:.3f} | "
                  f"{r['keywords']:.1f} |")
    print(f"\npeak resident memory of the run: {peak_mb:,.0f} MB")
    if best:
        print(f"fastest with recall@10 >= 0.95: {best['index']} {best['setting']}: {best['qps']:,.0f} q/s, "
              f"{best['qps'] / exact_qps:.1f}x exact, recall {best['recall_at_10']:.3f}")
    else:
        print("no setting reached recall@10 >= 0.95")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
