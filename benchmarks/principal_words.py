"""Which vote finds the words that make a review's label? P@5 against the human CAD edits.

Ground truth, on CAD IMDb dev pairs (Kaushik et al. 2020, ``../shared/data/cad``): in
``sentiment/combined/paired/dev_paired.tsv`` row 2k is an original review and row 2k+1 the
human revision that flips its label; the original's words that the editors deleted or replaced
(a word diff over canonical words) are the words that *made* the label. Only the part of the
review the members read (their first ``max_length`` tokens) counts, and only pairs with an edit
there are evaluated.

Predictors, each a ranking of the review's word types (P@5 = edited words among its first 5,
divided by 5) and, for the votes, a set of principal words (precision = edited share of it):

* every registered vote rule (:data:`engine.attribution.vote_rules.VOTE_RULES`): ``majority``
  (CoBA's vote), ``weighted-majority`` (dev accuracy above chance), ``rank-mean``,
  ``score-mean``, ``z-prior`` and ``z-tiebreak`` (prior: the train split's z-statistics),
  ``margin`` (the attributions are of the predicted class's probability; for two classes the
  runner-up's attribution is its negation, so the contrast is the negated scores);
* each member alone (its methods combined by majority), each member x method top-K;
* the z-statistics lexicon: the review's K words with the largest ``|z|`` on the train split
  (word presence per review, z of the positive-label share against 0.5) — costs nothing;
* the VADER lexicon: the review's K words with the largest ``|valence|``;
* K random words (seeded).

Standard errors are over reviews. Members: the default ensemble (``--members``) trained on the
full CAD train split with ``--preset`` (fast-cpu by default; ``--max-train-rows`` for a small run); everything
lives in one project (``--project``, default under the user data dir), so a rerun reuses the
trained members and the cached attributions (the expensive stage) and only re-scores.

Usage::

    python benchmarks/principal_words.py                       # all dev pairs, default ensemble
    nice -n 10 python benchmarks/principal_words.py --pairs 20 --max-train-rows 400 \\
        --members minilm-l3,minilm-l6 --max-length 128 --ig-steps 16 --samples 64   # a small run
"""

from __future__ import annotations

import argparse
import csv
import difflib
import math
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = REPO.parent / "shared" / "data"
CAD = DATA / "cad" / "sentiment"
PAIRED_DEV = CAD / "combined" / "paired" / "dev_paired.tsv"
METHODS = ("ig", "lime", "shapley")


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def lexical_keys(text: str) -> list[str]:
    from engine.text import segment

    return [w.key for w in segment(text) if w.is_lexical]


def edited_words(original: str, revision: str) -> list[tuple[int, str]]:
    """(position, key) of the original's lexical words that the revision deleted or replaced."""
    a, b = lexical_keys(original), lexical_keys(revision)
    out = []
    for op, i1, i2, _, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            out.extend((i, a[i]) for i in range(i1, i2))
    return out


def z_lexicon(texts: list[str], labels: list[str], positive: str) -> dict[str, float]:
    """Word -> z of the share of ``positive`` reviews among the reviews holding it (p0 = overall share)."""
    import numpy as np

    from engine.stats.zstats import z_scores

    df: dict[str, list[int]] = {}
    for text, label in zip(texts, labels):
        for key in set(lexical_keys(text)):
            df.setdefault(key, [0, 0])[int(label == positive)] += 1
    words = list(df)
    counts = np.array([df[w] for w in words], dtype=np.int64)
    p0 = sum(1 for lab in labels if lab == positive) / len(labels)
    _, _, z = z_scores(counts, p0)
    return {w: float(z[i, 1]) for i, w in enumerate(words) if np.isfinite(z[i, 1])}


def rank_by_lexicon(types: list[str], weights: dict[str, float], k: int) -> list[str]:
    """The ``k`` types with the largest ``|weight|`` (types without a weight are left out; ties: text order)."""
    scored = [(abs(weights[t]), i, t) for i, t in enumerate(types) if t in weights and weights[t] != 0]
    return [t for _, _, t in sorted(scored, key=lambda x: (-x[0], x[1]))[:k]]


class Tally:
    """Per-review P@K and precision of a word set; means with standard errors."""

    def __init__(self) -> None:
        self.p_at_k: list[float] = []
        self.precision: list[float] = []
        self.sizes: list[int] = []

    def add(self, ranking: list[str], gold: set[str], k: int, chosen: list[str] | None = None) -> None:
        self.p_at_k.append(len(set(ranking[:k]) & gold) / k)
        if chosen is not None:
            self.sizes.append(len(chosen))
            if chosen:
                self.precision.append(len(set(chosen) & gold) / len(chosen))

    @staticmethod
    def mean_se(values: list[float]) -> tuple[float, float]:
        if not values:
            return float("nan"), float("nan")
        m = sum(values) / len(values)
        if len(values) < 2:
            return m, float("nan")
        var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
        return m, math.sqrt(var / len(values))

    def row(self, name: str, k: int) -> str:
        p, se = self.mean_se(self.p_at_k)
        text = f"{name:<36} P@{k} {p:5.3f} ± {se:5.3f}"
        if self.sizes:
            q, qse = self.mean_se(self.precision)
            text += f"   |W_p| {sum(self.sizes) / len(self.sizes):4.2f}   precision {q:5.3f} ± {qse:5.3f}"
        return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--pairs", type=int, default=None, help="CAD dev pairs evaluated (default: all eligible)")
    parser.add_argument("--project", type=Path, default=None, help="project file to create or reuse")
    parser.add_argument("--members", default=None, help="comma-separated backbones (default: the default ensemble)")
    parser.add_argument("--preset", default="fast-cpu", help="training preset (default fast-cpu, the app's with a GPU; "
                        "without one the app trains top-cpu, whose word importance scores lower here)")
    parser.add_argument("--max-train-rows", type=int, default=None, help="train rows per member (default: all)")
    parser.add_argument("--max-length", type=int, default=None, help="tokens per review (default: the preset's)")
    parser.add_argument("--tune-layers", type=int, default=None, help="top-cpu: layers trained (default: the preset's)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--ig-steps", type=int, default=None, help="IG steps (default: the engine's)")
    parser.add_argument("--ig-nodes", choices=("uniform", "adaptive"), default=None,
                        help="IG node placement (default: the engine's for the budget)")
    parser.add_argument("--ig-tolerance", type=float, default=None,
                        help="IG |delta| above which an example is refined (0: never refine; default: the engine's)")
    parser.add_argument("--samples", type=int, default=None, help="LIME / KernelSHAP perturbations (default: the engine's)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cached-only", action="store_true",
                        help="compute no attribution: score the pairs every member x method already has (a run "
                             "stopped part-way, or one still running in another process)")
    args = parser.parse_args()

    import numpy as np

    from engine.attribution import (
        VoteContext,
        VoteSettings,
        attribute_ensemble,
        available_vote_rules,
        load_attributions,
        settings_key_for,
        top_k_words,
        vote_example,
    )
    from engine.attribution.vote_store import member_weights
    from engine.io.importer import ImportOptions, import_file
    from engine.models import MemberSpec, get_model, train_ensemble, train_preset
    from engine.models.config import EnsembleConfig
    from engine.models.config import DEFAULT_MEMBERS
    from engine.paths import user_data_dir
    from engine.store import ExampleQuery, Project

    started = time.perf_counter()
    backbones = tuple(args.members.split(",")) if args.members else DEFAULT_MEMBERS
    methods_used = tuple(args.methods.split(","))
    rows_tag = args.max_train_rows or "all"
    path = args.project or (user_data_dir() / "benchmarks" / "principal_words"
                            / f"cad-{'+'.join(backbones)}-{args.preset}-{rows_tag}-{args.max_length or 'preset'}.cbproj")
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.cached_only and not path.exists():
        sys.exit(f"--cached-only needs an existing project; {path} does not exist")
    project = Project.open(path, readonly=args.cached_only) if path.exists() else Project.create(path)
    train_rows = read_tsv(CAD / "orig" / "train.tsv")
    pairs = read_tsv(PAIRED_DEV)

    # ---------------------------------------------------------------- data
    names = {d.name for d in project.datasets()}
    if "cad-train" not in names:
        train = import_file(project, CAD / "orig" / "train.tsv", options=ImportOptions(name="cad-train"))
        import_file(project, CAD / "orig" / "dev.tsv", options=ImportOptions(append_to=train.dataset.id, split="dev"))
    if "cad-dev-pairs" not in names:
        originals = path.parent / "dev_pairs_original.tsv"
        with open(originals, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t")
            writer.writerow(["Sentiment", "Text", "pair"])
            for k in range(0, len(pairs) - 1, 2):
                writer.writerow([pairs[k]["Sentiment"], pairs[k]["Text"], k // 2])
        import_file(project, originals, options=ImportOptions(name="cad-dev-pairs", split="test"))
    train_ds, pairs_ds = project.dataset("cad-train"), project.dataset("cad-dev-pairs")

    # ---------------------------------------------------------------- members
    overrides = {}
    if args.max_train_rows:
        overrides["max_train_rows"] = args.max_train_rows
    if args.max_length:
        overrides["max_length"] = args.max_length
    if args.tune_layers:
        overrides["tune_layers"] = args.tune_layers
    # one member per backbone, trained one at a time (a small run may use an even number of members)
    specs = [MemberSpec(f"bench-{b}", b, {}, train_preset(args.preset, b, **overrides)) for b in backbones]
    t0 = time.perf_counter()
    print(f"members (preset {args.preset}, train rows {rows_tag}):")
    for spec in specs:  # one at a time: a small run may use an even number of members
        if args.cached_only:  # read-only: the members must be there
            info = get_model(project, spec.name)
            acc = float(info.metrics.get("dev_accuracy", float("nan")))
            print(f"  {info.name:<22} dev accuracy {acc:.3f}  (reused)", flush=True)
            continue
        trained = train_ensemble(project, train_ds.id, EnsembleConfig((spec,)), progress=_printer("train"))
        m = trained.members[0]
        print(f"  {m.model.name:<22} dev accuracy {m.dev_accuracy:.3f}{'  (reused)' if m.skipped else ''}", flush=True)
    print(f"  ({time.perf_counter() - t0:.0f} s)")
    names_ = [spec.name for spec in specs]
    infos = [get_model(project, n) for n in names_]
    max_length = infos[0].max_length

    # ---------------------------------------------------------------- evaluation pairs
    from engine.models.loading import load_member
    from engine.text import align_tokens, segment

    ids = project.example_ids(ExampleQuery(pairs_ds.id)).tolist()  # position k = pair k
    tokenizer = load_member(project, names_[0]).tokenizer
    eligible = []
    for k, ex in enumerate(ids):
        original, revision = pairs[2 * k]["Text"], pairs[2 * k + 1]["Text"]
        if original == revision:
            continue
        enc = tokenizer(original, truncation=True, max_length=max_length, return_offsets_mapping=True,
                        return_special_tokens_mask=True)
        words = segment(original)
        al = align_tokens(words, enc["offset_mapping"], special_mask=enc["special_tokens_mask"])
        n_seen = sum(1 for w in words[: al.n_covered_prefix] if w.is_lexical)
        if any(pos < n_seen for pos, _ in edited_words(original, revision)):
            eligible.append((ex, k))
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(eligible, min(args.pairs or len(eligible), len(eligible))))
    example_ids = [i for i, _ in chosen]
    print(f"evaluation: {len(chosen)} of {len(eligible)} eligible CAD dev pairs (of {len(ids)}), "
          f"first {max_length} tokens of each original")

    # ---------------------------------------------------------------- attributions (cached in the project)
    ig = {"n_steps": args.ig_steps} if args.ig_steps else {}
    if args.ig_nodes:
        ig["nodes"] = args.ig_nodes
    if args.ig_tolerance is not None:
        ig["delta_tolerance"] = args.ig_tolerance or None
    settings = {"ig": ig,
                "lime": {"num_samples": args.samples} if args.samples else {},
                "shapley": {"estimator": "kernel", **({"num_samples": args.samples} if args.samples else {})}}
    methods = {m: settings.get(m) or None for m in methods_used}
    t0 = time.perf_counter()
    if not args.cached_only:
        runs = attribute_ensemble(project, names_, pairs_ds.id, methods=methods, example_ids=example_ids,
                                  progress=_printer("attribute"))
        print(f"attributions ({time.perf_counter() - t0:.0f} s, noisy: shared CPU):")
        for r in runs:
            print(f"  {r.model_name:<22} {r.method:<8} computed {r.computed:4d}, cached {r.cached:4d}, "
                  f"{r.seconds:7.1f} s")

    from engine.attribution import resolve_settings

    scores: dict[int, dict[str, dict[str, object]]] = {}
    words_of: dict[int, list[str]] = {}
    for info in infos:
        for meth in methods_used:
            key = settings_key_for(info, meth, resolve_settings(meth, methods[meth]), max_length=info.max_length)
            for (ex, _), stored in load_attributions(project, info.id, meth, key, example_ids).items():
                scores.setdefault(ex, {}).setdefault(info.name, {})[meth] = stored.scores
                if len(stored.words) > len(words_of.get(ex, [])):
                    words_of[ex] = stored.words

    if args.cached_only:
        complete = {ex for ex, per in scores.items()
                    if all(meth in per.get(n, {}) for n in names_ for meth in methods_used)}
        chosen = [(ex, k) for ex, k in chosen if ex in complete]
        print(f"--cached-only: {len(chosen)} pairs have every member x method's attribution")

    # ---------------------------------------------------------------- lexicons
    z = z_lexicon([r["Text"] for r in train_rows], [r["Sentiment"] for r in train_rows], "Positive")
    # the prior the app's vote rules read (engine.attribution.word_prior: train split, words in >= 3 reviews)
    from engine.attribution.word_prior import label_word_prior

    app_prior = label_word_prior(project, train_ds.id)
    from vader import SentimentIntensityAnalyzer

    vader = dict(SentimentIntensityAnalyzer().lexicon)

    # ---------------------------------------------------------------- scoring
    k = args.k
    short = {n: n.removeprefix("bench-") for n in names_}
    weights = member_weights(infos)
    threshold = None if len(infos) % 2 else len(infos) // 2 + 1
    rules = available_vote_rules()
    tallies: dict[str, Tally] = {}

    def tally(name: str) -> Tally:
        return tallies.setdefault(name, Tally())

    for ex, pair in chosen:
        words = words_of[ex]
        s = scores[ex]
        covered = max(len(v) for per in s.values() for v in per.values())  # tokens the members read
        seen = [w for w in words[:covered] if lexical_keys(w)]
        types = list(dict.fromkeys(key for w in seen for key in lexical_keys(w)))
        original, revision = pairs[2 * pair]["Text"], pairs[2 * pair + 1]["Text"]
        gold = {key for pos, key in edited_words(original, revision) if pos < len(seen)}
        prior = {t: app_prior.get(t, 0.0) for t in types}
        contrast = {m: {meth: -np.asarray(v) for meth, v in per.items()} for m, per in s.items()}
        context = VoteContext(member_weights=weights, prior=prior, contrast=contrast)
        for rule in rules:
            vote = vote_example(words, s, VoteSettings(k=k, rule=rule, threshold=threshold), context=context)
            tally(f"vote: {rule}{' (default)' if rule == VoteSettings().rule else ''}").add(
                list(vote.ranked()), gold, k, list(vote.principal))
        full = vote_example(words, s, VoteSettings(k=k, threshold=threshold, rule="majority"))
        if len(methods_used) > 1:
            for meth in methods_used:
                single = vote_example(words, {m: {meth: s[m][meth]} for m in s}, VoteSettings(k=k, threshold=threshold, rule="majority"))
                tally(f"vote: majority, {meth} only").add(list(single.ranked()), gold, k, list(single.principal))
        for m in names_:
            tally(f"member {short[m]} (methods combined)").add(list(full.member_words[m]), gold, k)
        for m in names_:
            for meth in methods_used:
                tally(f"member {short[m]} x {meth}").add(top_k_words(words, s[m][meth], k), gold, k)
        tally("z-statistics lexicon (train split)").add(rank_by_lexicon(types, z, k), gold, k)
        tally("VADER lexicon").add(rank_by_lexicon(types, vader, k), gold, k)
        tally("random").add(rng.sample(types, min(k, len(types))), gold, k)

    print(f"\nP@{k} against the words the CAD editors changed ({len(chosen)} reviews; ± standard error):")
    for name, t in tallies.items():
        print(t.row(name, k))
    votes = {n: t for n, t in tallies.items() if n.startswith("vote: ") and " only" not in n}
    best = max(votes, key=lambda n: votes[n].mean_se(votes[n].p_at_k)[0])
    singles = {n: t for n, t in tallies.items() if n.startswith("member ")}
    best_single = max(singles, key=lambda n: singles[n].mean_se(singles[n].p_at_k)[0])
    b, bse = votes[best].mean_se(votes[best].p_at_k)
    sb = singles[best_single].mean_se(singles[best_single].p_at_k)[0]
    zl = tallies["z-statistics lexicon (train split)"].mean_se(tallies["z-statistics lexicon (train split)"].p_at_k)[0]
    print(f"\nbest vote rule: {best.removeprefix('vote: ')} (P@{k} {b:.3f} ± {bse:.3f}); "
          f"best single member/method: {best_single.removeprefix('member ')} ({sb:.3f}); z-lexicon {zl:.3f}")
    print(f"  vs best single: {100 * (b - sb):+.1f} points (target ≥ +5); vs z-lexicon: {100 * (b - zl):+.1f} points (target ≥ +10)")
    print(f"total {time.perf_counter() - started:.0f} s; project {path}")
    project.close()
    return 0


def _printer(tag: str):
    last = [0.0]

    def progress(fraction: float, message: str = "") -> None:
        now = time.perf_counter()
        if now - last[0] > 30 or fraction >= 1.0:
            last[0] = now
            print(f"  [{tag} {fraction:4.0%}] {message}", flush=True)

    return progress


if __name__ == "__main__":
    sys.exit(main())
