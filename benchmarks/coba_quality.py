"""Are counterbias candidates counterfactual edits? Generated candidates next to the human CAD revisions.

``--reviews`` CAD IMDb dev reviews (Kaushik et al. 2020; seeded sample, or ``--shortest``) go
through the engine's default generation (:func:`engine.counterbias.generate_counterbias` with
default :class:`~engine.counterbias.GenerateSettings`) with the bundled local model
(``--model``, default ``qwen2.5-coder-1.5b``), after the default vote (IG, LIME, Shapley;
gender word lists). The human revisions of the same reviews (``combined/paired/dev_paired.tsv``)
are scored the same way. Printed side by side:

* made / failed (reviews with at least one usable candidate, on this run);
* flip rates: the product's ensemble (majority of its members), and two independent judges built
  here — VADER (compound >= 0: Positive) and a TF-IDF logistic regression trained on IMDb
  train reviews (Maas et al. 2011, ``../shared/data/imdb_maas``) with every CAD original removed
  by normalised text, so the judge has never seen these reviews; each judge's accuracy on the
  originals is printed too;
* names and dates kept: the share of the original's fact words (named entities' words and the
  numbers of dates, :func:`engine.counterbias.edit.fact_words`) that the text still holds;
* spurious words kept: the share of the original's spurious words (``meta.keep_words`` of the
  candidate; for the human revision, the same words) still present (form or lemma), and the
  share of texts that keep all of them; the same with a gendered word the candidate swapped on purpose
  counted as kept when its swapped form is there (the issue's rule: spurious and gendered words "after the
  swap" verbatim); and the share an edit released as opinion words of a sentence
  read as the original label (``edit_opinion``; for the human revision, the candidate's released words it
  dropped too);
* word-level edit distance to the original (Levenshtein over words / original length) and
  BLEU-4 against the original (sacrebleu when installed, else a plain corpus BLEU-4 here);
* prompt leaks: texts that contain a sentence (four words or more) of the bundled prompts
  (``resources/prompts``) that the original does not contain;
* rating turned: of the texts whose original carries a rating ("7/10", "3 out of 10",
  :mod:`engine.text.ratings`), the share with no rating left that goes with the original label
  (``--rated`` runs only such reviews);
* a sentence left for the original label: the share of texts with a sentence that the LLM sentence
  reader (:mod:`engine.counterbias.sentence_reading`), reading it alone, still reads as the
  original label — recorded with each candidate at generation; the human revisions are read here
  by the same reader (a person's reading of run F: partly flipped candidates are those);
* what ``counterbias decide accept --passing`` would accept (``scores.passes`` of proposed
  candidates) and how the independent judges see that subset, and the same under the other
  ``member-agreement`` rule (every member sure of the target, or only the most accurate one).

Every candidate is written with its original and human revision to a JSONL file (``--out``)
for reading. The project (``--project``) keeps the members, attributions, vote, triples and LLM
answers, so a rerun only re-judges. ``--edit-polar`` and ``--phrase-swap`` take comma-separated values:
each combination is generated and reported in the same run (``--phrase-swap 0,1``: without and with the phrase swap of
:mod:`engine.counterbias.phrase_swap`; the answers both share come from the cache).

Usage::

    nice -n 10 python benchmarks/coba_quality.py --reviews 50
    nice -n 10 python benchmarks/coba_quality.py --reviews 3 --shortest --model smollm2-135m \\
        --project /tmp/pw/small.cbproj --max-train-rows 400 --members minilm-l3,minilm-l6   # a small run
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import os
import pickle
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = REPO.parent / "shared" / "data"
CAD = DATA / "cad" / "sentiment"
IMDB = DATA / "imdb_maas"
PAIRED_DEV = CAD / "combined" / "paired" / "dev_paired.tsv"
LABELS = ("Negative", "Positive")


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def norm_text(text: str) -> str:
    return " ".join(re.sub(r"<br\s*/?>", " ", text).lower().split())


def words(text: str) -> list[str]:
    from engine.text import segment

    return [w.key for w in segment(text) if w.is_lexical]


# ------------------------------------------------------------------ text measures


def edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance over word lists."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def bleu4(hypotheses: list[str], references: list[str]) -> float:
    """Corpus BLEU-4 (0–1) of ``hypotheses`` against one reference each; sacrebleu when installed."""
    try:
        import sacrebleu
    except ImportError:
        sacrebleu = None
    if sacrebleu is not None:
        return sacrebleu.corpus_bleu(hypotheses, [references]).score / 100
    matches, totals = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        h, r = words(hyp), words(ref)
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            hc = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
            rc = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / max(hyp_len, 1))
    return bp * math.exp(log_p)


def prompt_sentences() -> list[str]:
    """Normalised sentences (four words or more) of the bundled prompts."""
    folder = REPO / "resources" / "prompts"
    out = set()
    for path in folder.glob("*.md"):
        for part in re.split(r"[.!?\n\"]+", path.read_text(encoding="utf-8")):
            text = norm_text(re.sub(r"[|*#`{}]", " ", part))
            if len(text.split()) >= 4:
                out.add(text)
    return sorted(out)


def leaks(text: str, original: str, sentences: list[str]) -> list[str]:
    t, o = norm_text(text), norm_text(original)
    return [s for s in sentences if s in t and s not in o]


# ------------------------------------------------------------------ independent judges


def vader_labels(texts: list[str]) -> list[str]:
    from vader import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return [LABELS[analyzer.polarity_scores(t)["compound"] >= 0] for t in texts]


def tfidf_judge(cache: Path):
    """A TF-IDF + logistic regression sentiment classifier on IMDb train minus every CAD original."""
    if cache.exists():
        with open(cache, "rb") as f:
            return pickle.load(f)
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    cad = {norm_text(r["Text"]) for split in ("train", "dev") for r in read_tsv(CAD / "orig" / f"{split}.tsv")}
    cad |= {norm_text(r["Text"]) for split in ("train", "dev") for r in read_tsv(CAD / "new" / f"{split}.tsv")}
    texts, labels, dropped = [], [], 0
    with gzip.open(IMDB / "train.tsv.gz", "rt", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if norm_text(row["text"]) in cad:
                dropped += 1
                continue
            texts.append(row["text"])
            labels.append("Positive" if row["label"] == "pos" else "Negative")
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=200_000, sublinear_tf=True),
                          LogisticRegression(max_iter=1000, C=4.0))
    model.fit(texts, labels)
    model.info = f"trained on {len(texts)} IMDb train reviews, {dropped} CAD reviews removed by text"  # type: ignore[attr-defined]
    with open(cache, "wb") as f:
        pickle.dump(model, f)
    return model


def ensemble_labels(project, members: list[str], texts: list[str]) -> list[str]:
    """The members' majority label (ties: the highest mean probability)."""
    import numpy as np

    from engine.models.predict import predict
    from engine.models.store import get_model

    votes, probs = [], []
    for name in members:
        info = get_model(project, name)
        p = predict(project, name, texts)
        labels = list(info.labels)
        votes.append([labels[int(i)] for i in p.argmax(axis=1)])
        probs.append({lab: p[:, labels.index(lab)] for lab in labels})
    out = []
    for j in range(len(texts)):
        count = Counter(v[j] for v in votes)
        top = max(count.values())
        tied = [lab for lab, n in count.items() if n == top]
        out.append(max(tied, key=lambda lab: float(np.mean([pr[lab][j] for pr in probs]))))
    return out


# ------------------------------------------------------------------ setup


def add_setup_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the reviews, the members and the vote (shared with ``generation_ablation.py``)."""
    parser.add_argument("--reviews", type=int, default=50, help="CAD dev reviews (default 50)")
    parser.add_argument("--shortest", action="store_true", help="the shortest reviews instead of a seeded sample")
    parser.add_argument("--rated", action="store_true",
                        help="only reviews that carry a rating (\"7/10\", \"3 out of 10\"): a focused run on ratings")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--first", type=int, default=None,
                        help="keep only the first N of the chosen reviews (by id): a shorter run on the same sample")
    parser.add_argument("--skip", type=int, default=0,
                        help="drop the first N of the chosen reviews (after --first): continue a stopped run, writing "
                        "to another --results folder")
    parser.add_argument("--ids", default=None,
                        help="comma-separated example ids (as in --out's file): exactly these reviews, e.g. to re-read "
                        "a few after a change")
    parser.add_argument("--project", type=Path, default=None, help="project file to create or reuse")
    parser.add_argument("--members", default=None, help="backbones (default: the default ensemble)")
    parser.add_argument("--preset", default=None,
                        help="training preset of the members (default: the app's for this machine, sample-cpu without a GPU)")
    parser.add_argument("--max-train-rows", type=int, default=None)
    parser.add_argument("--methods", default="ig,lime,shapley")
    parser.add_argument("--ig-steps", type=int, default=None, help="IG steps (default: the engine's)")
    parser.add_argument("--samples", type=int, default=None, help="LIME / KernelSHAP perturbations (default: the engine's)")
    parser.add_argument("--rule", default=None, help="vote rule (default: the engine's default)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="bundled local LLM")
    parser.add_argument("--threads", type=int, default=None,
                        help="LLM CPU threads (default: the product's, which follow the machine's load)")
    parser.add_argument("--out", type=Path, default=None, help="JSONL of candidates (default next to the project)")


def prepare(args: argparse.Namespace) -> SimpleNamespace:
    """The benchmark project: CAD train + dev, the members trained, the chosen reviews with their human
    revisions, and the vote on them (each step reuses what the project already holds)."""
    from engine.attribution import VoteSettings, find_principal_words
    from engine.attribution.explainers import default_explainers
    from engine.io.importer import ImportOptions, import_file
    from engine.models import MemberSpec, train_ensemble, train_preset
    from engine.models.config import DEFAULT_MEMBERS, EnsembleConfig
    from engine.models.store import get_model
    from engine.paths import user_data_dir
    from engine.store import ExampleQuery, Project

    backbones = tuple(args.members.split(",")) if args.members else DEFAULT_MEMBERS
    if args.preset is None:
        from engine.models.device import default_preset

        args.preset = default_preset()
    path = args.project or (user_data_dir() / "benchmarks" / "coba_quality"
                            / f"cad-{'+'.join(backbones)}-{args.max_train_rows or 'all'}.cbproj")
    path.parent.mkdir(parents=True, exist_ok=True)
    out_path = args.out or path.with_name(f"coba_quality-{args.model}-{args.reviews}.jsonl")
    project = Project.open(path) if path.exists() else Project.create(path)

    # ---------------------------------------------------------------- data, members
    if "cad-train" not in {d.name for d in project.datasets()}:
        train = import_file(project, CAD / "orig" / "train.tsv", options=ImportOptions(name="cad-train"))
        import_file(project, CAD / "orig" / "dev.tsv", options=ImportOptions(append_to=train.dataset.id, split="dev"))
    dataset = project.dataset("cad-train")
    overrides = {"max_train_rows": args.max_train_rows} if args.max_train_rows else {}
    members = []
    for b in backbones:  # a sized preset (sample-cpu) depends on the backbone
        spec = MemberSpec(f"bench-{b}", b, {}, train_preset(args.preset, b, **overrides))
        trained = train_ensemble(project, dataset.id, EnsembleConfig((spec,)))
        members.append(spec.name)
        print(f"member {spec.name}: dev accuracy {trained.members[0].dev_accuracy:.3f}", file=sys.stderr)

    # ---------------------------------------------------------------- reviews and their human revisions
    pairs = read_tsv(PAIRED_DEV)
    revision_of = {norm_text(pairs[k]["Text"]): pairs[k + 1] for k in range(0, len(pairs) - 1, 2)}
    dev = project.examples(project.example_ids(ExampleQuery(dataset.id, splits=("dev",))))
    usable = [r for r in dev if norm_text(r["text"]) in revision_of
              and norm_text(revision_of[norm_text(r["text"])]["Text"]) != norm_text(r["text"])]
    if args.rated:
        from engine.text.ratings import find_ratings

        usable = [r for r in usable if find_ratings(r["text"])]
    if args.shortest:
        chosen = sorted(usable, key=lambda r: (len(r["text"]), r["id"]))[: args.reviews]
    else:
        chosen = sorted(random.Random(args.seed).sample(usable, min(args.reviews, len(usable))), key=lambda r: r["id"])
    if args.first:
        chosen = chosen[: args.first]
    if getattr(args, "skip", 0):
        chosen = chosen[args.skip:]
    if args.ids:
        wanted = {int(x) for x in args.ids.split(",") if x.strip()}
        chosen = [r for r in usable if int(r["id"]) in wanted]
        if len(chosen) < len(wanted):
            raise SystemExit(f"not usable CAD dev reviews: {sorted(wanted - {int(r['id']) for r in chosen})}")
    ids = [int(r["id"]) for r in chosen]
    originals = {int(r["id"]): r for r in chosen}
    human = {i: revision_of[norm_text(originals[i]["text"])]["Text"] for i in ids}
    print(f"{len(ids)} CAD dev reviews{' with a rating' if args.rated else ''} "
          f"({'shortest' if args.shortest else f'seed {args.seed}'}), "
          f"{sum(len(words(originals[i]['text'])) for i in ids) / len(ids):.0f} words on average", file=sys.stderr)

    # ---------------------------------------------------------------- vote and generation (engine defaults)
    # the app's explainers: a member trained only on its top layer judges but does not explain
    explainers = [m.name for m in default_explainers([get_model(project, n) for n in members])]
    t0 = time.perf_counter()
    settings = {"ig": {"n_steps": args.ig_steps} if args.ig_steps else {},
                "lime": {"num_samples": args.samples} if args.samples else {},
                "shapley": {"estimator": "kernel", **({"num_samples": args.samples} if args.samples else {})}
                if args.samples else {}}
    methods = {m: settings.get(m) or None for m in args.methods.split(",")}
    vote_settings = VoteSettings(**({"rule": args.rule} if args.rule else {}))
    vote = find_principal_words(project, dataset.id, explainers, methods=methods, vote=vote_settings,
                                wordlists=("gender",), example_ids=ids)
    print(f"vote rule {vote_settings.rule}, methods {methods}, explained by {', '.join(explainers)}", file=sys.stderr)
    t_vote = time.perf_counter() - t0
    return SimpleNamespace(path=path, out_path=out_path, project=project, dataset=dataset, members=members,
                           ids=ids, originals=originals, human=human, vote=vote, t_vote=t_vote)


# ------------------------------------------------------------------ main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    add_setup_options(parser)
    parser.add_argument("--edit-polar", default="0.8",
                        help="comma-separated edit_polar values, each generated and reported in this run "
                        "(e.g. 0,0.8: before/after; the LLM answers they share come from the cache)")
    parser.add_argument("--phrase-swap", default="1",
                        help="comma-separated edit_swap values (0 off, 1 on), each generated and reported in this run "
                        "(0,1: before/after; the LLM answers they share come from the cache)")
    parser.add_argument("--llm-judge", action="store_true",
                        help="also ask the LLM which label each candidate expresses (verification's llm-judge check)")
    args = parser.parse_args()

    from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
    from engine.counterbias.manipulate import matched_words
    from engine.counterbias.verify import released_words
    from engine.llm.config import LLMConfig
    from engine.text.ratings import against, find_ratings

    started = time.perf_counter()
    setup = prepare(args)
    path, out_path, project, dataset, members = setup.path, setup.out_path, setup.project, setup.dataset, setup.members
    ids, originals, human, vote, t_vote = setup.ids, setup.originals, setup.human, setup.vote, setup.t_vote
    config = LLMConfig(backend="local", model=args.model, concurrency=1,
                       params={"temperature": 0.0, "seed": 0}, options={"n_threads": args.threads} if args.threads else {})
    variants = [(float(x), bool(int(y))) for x in args.edit_polar.split(",") for y in args.phrase_swap.split(",")]
    for polar, swap in variants:
        t0 = time.perf_counter()
        gen_settings = GenerateSettings(edit_polar=polar, edit_swap=swap)
        result = generate_counterbias(project, dataset.id, ids, config, vote_set_id=vote.vote_set_id,
                                      settings=gen_settings)
        if args.llm_judge:
            from engine.verification.llm_judge import llm_judge_candidates

            made_ids = [r["id"] for r in candidate_rows(project, example_ids=ids)
                        if r["status"] != "failed" and r["meta"].get("settings_key") == gen_settings.key()]
            judged = llm_judge_candidates(project, made_ids, config)
            print(f"LLM judge: {judged.summary()}", file=sys.stderr)
        t_gen = time.perf_counter() - t0
        rows = [r for r in candidate_rows(project, example_ids=ids) if r["meta"].get("settings_key") == gen_settings.key()]

        # ---------------------------------------------------------------- judges
        tfidf = tfidf_judge(path.with_name("imdb_tfidf_judge.pkl"))
        made = [r for r in rows if r["status"] != "failed"]
        first = {}
        for r in made:  # one candidate per review: the first made
            first.setdefault(int(r["example_id"]), r)
        gen_ids = sorted(first)
        gen_texts = [first[i]["text"] for i in gen_ids]
        targets = {i: ("Positive" if originals[i]["label"] == "Negative" else "Negative") for i in ids}
        human_texts = [human[i] for i in ids]
        orig_texts = [originals[i]["text"] for i in ids]

        def rates(texts: list[str], keys: list[int]) -> dict[str, float]:
            if not texts:
                return {"ensemble": float("nan"), "vader": float("nan"), "tfidf": float("nan")}
            ens = ensemble_labels(project, members, texts)
            vad = vader_labels(texts)
            tf = list(tfidf.predict(texts))
            return {name: sum(p == targets[k] for p, k in zip(pred, keys)) / len(keys)
                    for name, pred in (("ensemble", ens), ("vader", vad), ("tfidf", tf))}

        def accuracy(texts: list[str], keys: list[int]) -> dict[str, float]:
            ens, vad, tf = ensemble_labels(project, members, texts), vader_labels(texts), list(tfidf.predict(texts))
            return {name: sum(p == originals[k]["label"] for p, k in zip(pred, keys)) / len(keys)
                    for name, pred in (("ensemble", ens), ("vader", vad), ("tfidf", tf))}

        sentences = prompt_sentences()

        from engine.attribution.wordlists import gender_pairs

        gendered = {w for pair in gender_pairs() for w in pair}

        from engine.attribution.word_prior import label_word_z
        from engine.counterbias.edit import fact_words
        from engine.text.sentences import split_sentences

        label_z = label_word_z(project, dataset.id)
        from engine.attribution.word_prior import label_rating_sides

        sides = label_rating_sides(project, dataset.id, field="text")
        rated = {k for k in ids if find_ratings(originals[k]["text"])}

        facts = {k: list(dict.fromkeys(w for s in split_sentences(originals[k]["text"])
                                       for w in fact_words(s, label_z.get(originals[k]["label"], {}))))
                 for k in ids}

        def text_stats(texts: list[str], keys: list[int], swaps_ok: bool = False) -> dict[str, float]:
            if not texts:
                return {}
            fact_kept = sum(len(matched_words(text, facts[k])) for text, k in zip(texts, keys) if facts[k])
            fact_total = sum(len(facts[k]) for k in keys)
            kept_words = total_words = all_kept = released = 0
            plain_kept = plain_total = plain_all = 0
            swap_kept = 0
            dist, leaked = [], 0
            rated_n = sum(k in rated for k in keys)
            turned = sum(k in rated and not against(text, targets[k], originals[k]["label"], sides)
                         for text, k in zip(texts, keys))
            for text, k in zip(texts, keys):
                meta = (first.get(k) or {}).get("meta", {})
                keep = list(meta.get("keep_words") or [])
                found = matched_words(text, keep) if keep else []
                freed = released_words(meta)
                released += sum(w not in found and w.lower() in freed for w in keep)
                kept_words += len(found)
                total_words += len(keep)
                all_kept += len(found) == len(keep)
                # the issue's own rule: a gendered word the candidate swapped on purpose is kept in its swapped form
                if swaps_ok:
                    swapped_to = {str(a).lower(): str(b) for fld in meta.get("fields") or []
                                  for a, b in fld.get("gender_swaps") or []}
                    lost = [w for w in keep if w not in found and w.lower() in swapped_to]
                    swap_kept += len(found) + (len(matched_words(text, [swapped_to[w.lower()] for w in lost]))
                                               if lost else 0)
                else:
                    swap_kept += len(found)
                # gendered words are swapped on purpose (CoBA's gender swap): count the others on their own too
                plain = [w for w in keep if w.lower() not in gendered]
                found_plain = matched_words(text, plain) if plain else []
                plain_kept += len(found_plain)
                plain_total += len(plain)
                plain_all += len(found_plain) == len(plain)
                o = words(originals[k]["text"])
                dist.append(edit_distance(o, words(text)) / max(len(o), 1))
                leaked += bool(leaks(text, originals[k]["text"], sentences))
            return {"spurious_words_kept": kept_words / total_words if total_words else float("nan"),
                    "counts": {"spurious_words_kept": (kept_words, total_words), "swap_kept": (swap_kept, total_words)},
                    "swap_kept": swap_kept / total_words if total_words else float("nan"),
                    "released": released / total_words if total_words else float("nan"),
                    "all_spurious_kept": all_kept / len(texts),
                    "plain_kept": plain_kept / plain_total if plain_total else float("nan"),
                    "plain_all_kept": plain_all / len(texts), "edit_distance": sum(dist) / len(dist),
                    "facts_kept": fact_kept / fact_total if fact_total else float("nan"),
                    "ratings_turned": turned / rated_n if rated_n else float("nan"), "rated": rated_n,
                    "bleu4": bleu4(texts, [originals[k]["text"] for k in keys]), "prompt_leaks": leaked}

        from engine.verification.checks import residual_of

        def left_of(r: dict) -> list[str] | None:  # sentences the LLM reader still read as the original label
            return residual_of(r["meta"], r["scores"])

        from engine.counterbias.sentence_reading import LLMReader, residual_sentences
        from engine.llm.cache import CachedClient
        from engine.llm.registry import create_backend

        from contextlib import closing

        with closing(create_backend(config)) as reader_backend:  # the human revisions, read by the same reader
            reader = LLMReader(CachedClient(reader_backend, project), dataset.labels,
                               gen_settings.task_description(dataset.labels))
            h_left = residual_sentences(reader, [(human[i], originals[i]["label"]) for i in ids])
        g_left = [left_of(first[i]) for i in gen_ids]
        g_read = [x for x in g_left if x is not None]
        g_rates, h_rates = rates(gen_texts, gen_ids), rates(human_texts, ids)
        g_stats, h_stats = text_stats(gen_texts, gen_ids, swaps_ok=True), text_stats(human_texts, ids)
        h_same = rates([human[i] for i in gen_ids], gen_ids)  # the human revisions of the reviews that got a candidate
        acc = accuracy(orig_texts, ids)
        passing = [r for r in made if r["status"] == "proposed" and r["scores"].get("passes")]
        p_ids = [int(r["example_id"]) for r in passing]
        p_rates = rates([r["text"] for r in passing], p_ids)

        # ---------------------------------------------------------------- report
        def f(x: float) -> str:
            return "   –" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:5.2f}"

        n = len(ids)
        print(f"\nCoBA quality on {n} CAD dev reviews — model {args.model}, members {', '.join(members)}, "
              f"edit_polar {polar}, phrase swap {'on' if swap else 'off'}")
        print(f"judges on the originals (accuracy): ensemble {acc['ensemble']:.2f}, VADER {acc['vader']:.2f}, "
              f"TF-IDF {acc['tfidf']:.2f} ({getattr(tfidf, 'info', '')})")
        print(f"{'':<34}{'generated':>10}{'human':>10}")
        print(f"{'made (reviews) / failed':<34}{len(gen_ids):>6}/{n - len(gen_ids):<3}{'–':>10}")
        print(f"{'candidates made / failed (rows)':<34}{len(made):>6}/{len(rows) - len(made):<3}")
        for name, label in (("ensemble", "flip rate, product ensemble"), ("vader", "flip rate, VADER"),
                            ("tfidf", "flip rate, TF-IDF (IMDb)")):
            print(f"{label:<34}{f(g_rates[name]):>10}{f(h_rates[name]):>10}   (human on the same reviews {f(h_same[name])})")
        for key, label in (("spurious_words_kept", "spurious words kept (words)"),
                           ("swap_kept", "  a swapped gendered word as kept"),
                           ("released", "  gone, released as opinion words"), ("all_spurious_kept", "texts keeping all"),
                           ("plain_kept", "  the same, gendered words left out"), ("plain_all_kept", "  texts keeping all of those"),
                           ("facts_kept", "names and dates kept (words)"),
                           ("edit_distance", "word edit distance to original"), ("bleu4", "BLEU-4 against original")):
            n_of = g_stats.get("counts", {}).get(key)
            print(f"{label:<34}{f(g_stats.get(key, float('nan'))):>10}{f(h_stats.get(key, float('nan'))):>10}"
                  + (f"   ({n_of[0]} of {n_of[1]} words generated)" if n_of else ""))
        print(f"{'prompt leaks (texts)':<34}{g_stats.get('prompt_leaks', 0):>10}{h_stats.get('prompt_leaks', 0):>10}")
        print(f"{'rating turned (rated texts)':<34}{f(g_stats.get('ratings_turned', float('nan'))):>10}"
              f"{f(h_stats.get('ratings_turned', float('nan'))):>10}   (of {g_stats.get('rated', 0)} / "
              f"{h_stats.get('rated', 0)} rated; rating sides {sides or 'none'})")
        print(f"{'a sentence left for the original':<34}{f(sum(bool(x) for x in g_read) / len(g_read) if g_read else float('nan')):>10}"
              f"{f(sum(bool(x) for x in h_left) / len(h_left)):>10}   (texts; the LLM reading each sentence alone)")
        from engine.counterbias.verify import RESIDUAL_SHARE
        from engine.verification.checks import residual_within

        # what the residual check lets through at its default share
        g_within = [residual_within(x, [first[i]["text"]], RESIDUAL_SHARE)[0] for x, i in zip(g_left, gen_ids)
                    if x is not None]
        h_within = [residual_within(x, [human[i]], RESIDUAL_SHARE)[0] for x, i in zip(h_left, ids)]
        print(f"{f'  at most {RESIDUAL_SHARE:.0%} of sentences left':<34}"
              f"{f(sum(g_within) / len(g_within) if g_within else float('nan')):>10}"
              f"{f(sum(h_within) / len(h_within)):>10}   (texts the residual check passes)")
        print(f"\ndecide accept --passing would accept {len(passing)} of {len(made)} candidates; on those: "
              f"ensemble {f(p_rates['ensemble'])}, VADER {f(p_rates['vader'])}, TF-IDF {f(p_rates['tfidf'])} flip rate")
        from engine.counterbias import CandidateFilter
        from engine.verification.checks import AGREEMENTS, agreement_shortfall

        rule = CandidateFilter()
        for other in (a for a in AGREEMENTS if a != rule.agreement):  # the other agreement rule, on the same verdicts
            others = [r for r in made if r["status"] == "proposed" and (r["scores"].get("verdicts") or {})
                      and not any(v.get("status") == "fail" for name, v in r["scores"]["verdicts"].items()
                                  if name in rule.required() and name != "member-agreement")
                      and not agreement_shortfall((r["scores"].get("judge") or {}).get("members") or {},
                                                  rule.min_member_prob, other)[0]]
            o_rates = rates([r["text"] for r in others], [int(r["example_id"]) for r in others])
            print(f"  with agreement={other} instead of {rule.agreement}: {len(others)} accepted; on those: ensemble "
                  f"{f(o_rates['ensemble'])}, VADER {f(o_rates['vader'])}, TF-IDF {f(o_rates['tfidf'])} flip rate")
        failing = Counter(name for r in made for name, v in (r["scores"].get("verdicts") or {}).items()
                          if v.get("status") == "fail")
        print("failing checks (candidates): " + (", ".join(f"{k} {v}" for k, v in failing.most_common()) or "none"))
        edits = [e for r in made for f in r["meta"].get("fields") or [] for e in f.get("edits") or []]
        if edits:  # edit mode: how many sentences sent to the LLM ended up edited, and what their answers met
            used = sum(e.get("new") is not None for e in edits)
            met = Counter(p for e in edits for p in dict.fromkeys(e.get("problems") or []))
            print(f"sentences sent for editing {len(edits)}, edited {used} ({used / len(edits):.0%}); answers met: "
                  + (", ".join(f"{k} {v}" for k, v in met.most_common()) or "nothing"))
            swapped = sum(bool(e.get("swapped")) for e in edits)
            print(f"phrase swaps taken: {swapped} sentences (marked opinion phrases replaced by their opposites)")
        if args.llm_judge:
            agree = [r for r in made if (r["scores"].get("llm_judge") or {}).get("label") == r["target_label"]]
            print(f"LLM judge reads {len(agree)} of {len(made)} candidates as their target")
        print(f"vote {t_vote:.0f} s, generation {t_gen:.0f} s ({result.sent} requests; noisy: shared CPU); "
              f"total {time.perf_counter() - started:.0f} s")

        name = f"{out_path.stem}-polar{polar}{'' if swap else '-noswap'}{out_path.suffix}"
        with open(out_path.with_name(name), "w", encoding="utf-8") as fh:
            for r in rows:
                k = int(r["example_id"])
                fh.write(json.dumps({
                    "example_id": k, "candidate_id": r["id"], "status": r["status"],
                    "original_label": originals[k]["label"], "target_label": r["target_label"],
                    "original": originals[k]["text"], "human_revision": human[k], "candidate": r["text"],
                    "passes": r["scores"].get("passes"), "judge": r["scores"].get("judge"),
                    "verdicts": r["scores"].get("verdicts"), "llm_judge": r["scores"].get("llm_judge"),
                    "keep_words": r["meta"].get("keep_words"), "missing_spurious": r["scores"].get("missing_spurious"),
                    "edit_distance": (edit_distance(words(originals[k]["text"]), words(r["text"] or ""))
                                      / max(len(words(originals[k]["text"])), 1)),
                    "prompt_leaks": leaks(r["text"] or "", originals[k]["text"], sentences),
                    "error": r["meta"].get("error"), "residual": left_of(r),
                    "human_residual": h_left[ids.index(k)],
                }, ensure_ascii=False) + "\n")
    print(f"candidates with originals and human revisions: {out_path.parent}/{out_path.stem}-polar*.jsonl")
    project.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
