"""Do the ensemble's principal words agree with human judgements better than single members/methods?

Ground truth, on CAD IMDb dev reviews (Kaushik et al. 2020):

* **CAD edits** — in ``cad/sentiment/combined/paired/dev_paired.tsv`` row 2k is an original
  review and row 2k+1 a human revision that flips its label; the original's words that the
  human deleted or replaced (a word diff over canonical words) are the words that *made* the
  label. Precision = share of predicted words that were edited.
* **Wang & Culotta causal terms** — ``wang_culotta_causal_terms/aaai2021/imdb_vocab_antonym_causal.csv``
  labels 2,449 IMDb terms as causal (sentiment-bearing, 389) or not (2,060). Precision = share
  of predicted words *that are in that vocabulary* labelled causal (coverage = share of
  predicted words in the vocabulary).

Predictors, per example (K = 5): the ensemble's principal words W_p (3 members x IG, LIME,
KernelSHAP, methods combined by majority within each member, tau = 2), the ensemble with a
single method, each member alone (its methods combined), each member x method top-K, the
ensemble's spurious words W_s (expected to agree *less*), and K random words.

Cost control on 2 CPU cores (all three real members: MiniLM-L6, MiniLM-L3, MPNet-base): the
members are fine-tuned with the ``fast-cpu`` preset on a seeded sub-sample of CAD train
(``--train-rows``, default 320) at ``--max-length`` 64 tokens; the evaluation uses
``--pairs`` (default 40) seeded dev pairs whose first 64 tokens contain an edited word; IG uses
``--ig-steps`` (default 50), LIME and KernelSHAP ``--samples`` (default 100) perturbations.
Everything is stored in a project under ``--workdir``, so a rerun reuses the trained members
and cached attributions.

Usage: ``python benchmarks/principal_words.py [--pairs 40] [--train-rows 320] [--fresh]``
"""

from __future__ import annotations

import argparse
import csv
import difflib
import os
import random
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = REPO.parent / "shared" / "data"
CAD = DATA / "cad" / "sentiment"
PAIRED_DEV = CAD / "combined" / "paired" / "dev_paired.tsv"
CAUSAL = DATA / "wang_culotta_causal_terms" / "aaai2021" / "imdb_vocab_antonym_causal.csv"
MEMBERS = ("minilm-l6", "minilm-l3", "mpnet-base")
METHODS = ("ig", "lime", "shapley")


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def edited_words(original: str, revision: str) -> list[tuple[int, str]]:
    """(position, key) of the original's lexical words that the revision deleted or replaced."""
    from engine.text import segment

    a = [w for w in segment(original) if w.is_lexical]
    b = [w.key for w in segment(revision) if w.is_lexical]
    out = []
    matcher = difflib.SequenceMatcher(a=[w.key for w in a], b=b, autojunk=False)
    for op, i1, i2, _, _ in matcher.get_opcodes():
        if op in ("replace", "delete"):
            out.extend((i, a[i].key) for i in range(i1, i2))
    return out


def lexical_index(text: str) -> list[str]:
    from engine.text import segment

    return [w.key for w in segment(text) if w.is_lexical]


def causal_terms() -> tuple[set[str], set[str]]:
    from engine.text import normalize

    yes, no = set(), set()
    with open(CAUSAL, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            term = normalize(row["term"])
            if row["causal"] == "1":
                yes.add(term)
            elif row["causal"] == "0":
                no.add(term)
    return yes, no - yes


class Tally:
    """Micro-averaged precision of predicted word sets against two ground truths."""

    def __init__(self) -> None:
        self.n_examples = self.n_pred = self.hits_edit = 0
        self.annotated = self.hits_causal = 0

    def add(self, predicted: set[str], edited: set[str], causal: set[str], noncausal: set[str]) -> None:
        self.n_examples += 1
        self.n_pred += len(predicted)
        self.hits_edit += len(predicted & edited)
        self.annotated += len(predicted & (causal | noncausal))
        self.hits_causal += len(predicted & causal)

    def row(self, name: str) -> str:
        p_edit = self.hits_edit / self.n_pred if self.n_pred else float("nan")
        p_causal = self.hits_causal / self.annotated if self.annotated else float("nan")
        coverage = self.annotated / self.n_pred if self.n_pred else float("nan")
        return (
            f"{name:<34} {self.n_pred / max(1, self.n_examples):6.2f}   {p_edit:6.3f}      "
            f"{p_causal:6.3f}   {coverage:6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="CAD dev pairs evaluated (default 40)")
    parser.add_argument("--train-rows", type=int, default=320, help="CAD train rows per member (default 320)")
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--ig-steps", type=int, default=50)
    parser.add_argument("--samples", type=int, default=100, help="LIME / KernelSHAP perturbations")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=None, help="project folder (default: user data dir)")
    parser.add_argument("--fresh", action="store_true", help="delete the stored project first")
    args = parser.parse_args()

    from engine.attribution import (
        VoteSettings,
        attribute_ensemble,
        find_principal_words,
        load_attributions,
        settings_key_for,
        top_k_words,
        vote_example,
    )
    from engine.io.importer import ImportOptions, import_file
    from engine.models import default_ensemble, get_model, train_ensemble
    from engine.paths import user_data_dir
    from engine.store import ExampleQuery, Project

    started = time.perf_counter()
    workdir = args.workdir or user_data_dir() / "benchmarks" / "principal_words"
    if args.fresh and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"cad-{args.train_rows}-{args.max_length}.cbproj"
    project = Project.open(path) if path.exists() else Project.create(path)

    # ---------------------------------------------------------------- data
    if not project.datasets():
        train = import_file(project, CAD / "orig" / "train.tsv", options=ImportOptions(name="cad-train"))
        import_file(project, CAD / "orig" / "dev.tsv", options=ImportOptions(append_to=train.dataset.id, split="dev"))
        pairs = read_tsv(PAIRED_DEV)
        originals = workdir / "dev_pairs_original.tsv"
        with open(originals, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t")
            writer.writerow(["Sentiment", "Text", "pair"])
            for k in range(0, len(pairs) - 1, 2):
                writer.writerow([pairs[k]["Sentiment"], pairs[k]["Text"], k // 2])
        import_file(project, originals, options=ImportOptions(name="cad-dev-pairs", split="test"))
    train_ds, pairs_ds = project.dataset("cad-train"), project.dataset("cad-dev-pairs")
    pairs = read_tsv(PAIRED_DEV)

    # ---------------------------------------------------------------- members
    config = default_ensemble(
        "bench-", preset="fast-cpu", max_length=args.max_length, max_train_rows=args.train_rows, max_dev_rows=120,
        learning_rate=2e-4,
    )
    t0 = time.perf_counter()
    trained = train_ensemble(project, train_ds.id, config, progress=_printer("train"))
    print(f"\nmembers ({time.perf_counter() - t0:.0f} s; fast-cpu, {args.train_rows} train rows, {args.max_length} tokens):")
    for m in trained.members:
        print(f"  {m.model.name:<18} dev accuracy {m.dev_accuracy:.3f}{'  (reused)' if m.skipped else ''}")

    # ---------------------------------------------------------------- evaluation pairs
    from engine.models.loading import load_member
    from engine.text import align_tokens, segment

    ids = project.example_ids(ExampleQuery(pairs_ds.id)).tolist()  # position k = pair k
    tokenizer = load_member(project, config.names[0]).tokenizer
    eligible = []
    for k, ex in enumerate(ids):
        original, revision = pairs[2 * k]["Text"], pairs[2 * k + 1]["Text"]
        enc = tokenizer(original, truncation=True, max_length=args.max_length, return_offsets_mapping=True, return_special_tokens_mask=True)
        words = segment(original)
        al = align_tokens(words, enc["offset_mapping"], special_mask=enc["special_tokens_mask"])
        n_seen = sum(1 for w in words[: al.n_covered_prefix] if w.is_lexical)
        if any(pos < n_seen for pos, _ in edited_words(original, revision)):
            eligible.append((ex, k))
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(eligible, min(args.pairs, len(eligible))))
    example_ids = [i for i, _ in chosen]
    print(f"\nevaluation: {len(chosen)} of {len(eligible)} eligible CAD dev pairs (seed {args.seed}), first {args.max_length} tokens of each original")

    # ---------------------------------------------------------------- attributions (cached)
    methods = {"ig": {"n_steps": args.ig_steps}, "lime": {"num_samples": args.samples}, "shapley": {"estimator": "kernel", "num_samples": args.samples}}
    t0 = time.perf_counter()
    runs = attribute_ensemble(project, config.names, pairs_ds.id, methods=methods, example_ids=example_ids, progress=_printer("attribute"))
    print(f"\nattributions ({time.perf_counter() - t0:.0f} s):")
    for r in runs:
        delta = f", max |IG delta| {r.max_abs_delta:.1e}" if r.max_abs_delta is not None else ""
        print(f"  {r.model_name:<18} {r.method:<8} computed {r.computed:3d}, cached {r.cached:3d}, {r.seconds:6.1f} s{delta}")

    scores: dict[int, dict[str, dict[str, object]]] = {}
    words_of: dict[int, list[str]] = {}
    for name in config.names:
        info = get_model(project, name)
        for meth, settings in methods.items():
            key = settings_key_for(info, meth, settings, max_length=info.max_length)
            for (ex, _), stored in load_attributions(project, info.id, meth, key, example_ids).items():
                scores.setdefault(ex, {}).setdefault(name, {})[meth] = stored.scores
                if len(stored.words) > len(words_of.get(ex, [])):
                    words_of[ex] = stored.words

    # ---------------------------------------------------------------- scoring
    causal, noncausal = causal_terms()
    short = {n: n.removeprefix("bench-") for n in config.names}
    vote = VoteSettings(k=args.k)
    tallies: dict[str, Tally] = {}

    def tally(name: str) -> Tally:
        return tallies.setdefault(name, Tally())

    for ex, pair in chosen:
        words = words_of[ex]
        lexical = sorted({w for w in lexical_index(" ".join(words))})
        original, revision = pairs[2 * pair]["Text"], pairs[2 * pair + 1]["Text"]
        n_seen = sum(1 for w in words if lexical_index(w))
        edited = {key for pos, key in edited_words(original, revision) if pos < n_seen}
        s = scores[ex]
        full = vote_example(words, s, vote)
        tally(f"ensemble W_p ({'+'.join(METHODS)})").add(set(full.principal), edited, causal, noncausal)
        any_vote = vote_example(words, s, VoteSettings(k=args.k, combine="any"))
        tally("ensemble W_p, combine=any").add(set(any_vote.principal), edited, causal, noncausal)
        for meth in METHODS:
            single = vote_example(words, {m: {meth: s[m][meth]} for m in s}, vote)
            tally(f"ensemble W_p, {meth} only").add(set(single.principal), edited, causal, noncausal)
        for m in config.names:
            tally(f"{short[m]} (all methods)").add(set(full.member_words[m]), edited, causal, noncausal)
        for m in config.names:
            for meth in METHODS:
                tally(f"{short[m]} x {meth} top-{args.k}").add(set(top_k_words(words, s[m][meth], args.k)), edited, causal, noncausal)
        tally("ensemble W_s (spurious)").add(set(full.spurious), edited, causal, noncausal)
        tally(f"random {args.k} words").add(set(rng.sample(lexical, min(args.k, len(lexical)))), edited, causal, noncausal)

    print(f"\nprecision of predicted words (micro-averaged over {len(chosen)} reviews, K={args.k}, tau=2):")
    print(f"{'predictor':<34} {'words':>6}   {'P(CAD edit)':>10}  {'P(causal)':>8}  {'in vocab':>8}")
    for name, t in tallies.items():
        print(t.row(name))

    vote_run = find_principal_words(project, pairs_ds.id, config.names, methods=methods, vote=vote, example_ids=example_ids, compute=False)
    top = ", ".join(f"{w.word} ({w.examples})" for w in vote_run.summary.principal[:12])
    spur = ", ".join(f"{w.word} ({w.examples})" for w in vote_run.summary.spurious[:12])
    print(f"\nmost frequent principal words: {top}")
    print(f"most frequent spurious words:  {spur}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s; project {path}")
    project.close()


def _printer(tag: str):
    last = [0.0]

    def progress(fraction: float, message: str = "") -> None:
        now = time.perf_counter()
        if now - last[0] > 30 or fraction >= 1.0:
            last[0] = now
            print(f"  [{tag} {fraction:4.0%}] {message}", flush=True)

    return progress


if __name__ == "__main__":
    main()
