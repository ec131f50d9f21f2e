"""CLI verbs of CORE: ``corpus`` (import + label), ``index`` (embed + FAISS), ``retrieve``, ``core`` (retrieve-then-edit)
and ``train-retriever`` (CF-DPR)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.cli.args import JSON, PROJECT
from engine.cli.commands import command
from engine.cli.index_args import check_k_and_diversity, index_options, kind_params
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken, scaled


def _index_options(p: argparse.ArgumentParser) -> None:
    index_options(p.add_argument_group("index"))


def _encoder_args(args: argparse.Namespace, project: Any) -> tuple[str, dict[str, Any]]:
    """``(encoder name, options)`` of the index options; ``--retriever NAME`` selects a trained retriever."""
    options: dict[str, Any] = {"max_length": args.max_length}
    name = args.encoder
    if args.retriever:
        from engine.retrieval.dpr import trained_retriever

        if name not in ("minilm-l6", "trained"):
            from engine.retrieval.errors import EncoderError

            raise EncoderError(f"--retriever is a trained retriever; it cannot go with --encoder {name}.",
                               "Drop --encoder (or use --encoder trained).")
        name, options["path"] = "trained", trained_retriever(project, args.retriever)
    elif name == "trained":
        from engine.retrieval.errors import EncoderError

        raise EncoderError("--encoder trained needs --retriever NAME.", "Name a retriever trained with train-retriever.")
    return name, options


@command("corpus")
def _add_corpus(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "corpus", parents=[PROJECT, JSON],
        help="import unlabeled text as deduplicated sentences (CORE's corpus) and label them with a member",
        description="Split each document of FILE into sentences, drop sentences already in the corpus and store the "
        "rest. An interrupted import resumes where it stopped; importing the same file again adds nothing. "
        "--label-with labels every unlabelled sentence with a trained member (probabilities kept).")
    p.add_argument("name", help="corpus name (created if new)")
    p.add_argument("files", nargs="*", type=Path, help="CSV/TSV/JSONL (optionally .gz) or .txt (one document a line)")
    p.add_argument("--text-col", help="column holding the text (default: text, sentence, review, ... or the only one)")
    p.add_argument("--quoting", choices=["csv", "none"], default="csv", help="'none' when quotes are text (SST-2)")
    p.add_argument("--limit-docs", type=int, help="read at most N documents of each file")
    p.add_argument("--label-with", metavar="MODEL", help="a trained member: label every unlabelled sentence")
    p.set_defaults(run=_run_corpus)


def _run_corpus(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.io.readers import ReadOptions
    from engine.retrieval.corpus import get_corpus, import_corpus, label_corpus
    from engine.retrieval.errors import CorpusSourceError
    from engine.store import Project

    if not args.files and not args.label_with:
        raise CorpusSourceError("Nothing to do: no file to import and no --label-with.",
                                "Name one or more files, or --label-with MODEL.")
    out: dict[str, Any] = {"corpus": args.name, "imports": []}
    with Project.open(args.project) as project:
        steps = len(args.files) + (1 if args.label_with else 0)
        for i, path in enumerate(args.files):
            result = import_corpus(project, args.name, path, text_column=args.text_col,
                                   read_options=ReadOptions(quoting=args.quoting), limit_docs=args.limit_docs,
                                   progress=scaled(progress, i / steps, (i + 1) / steps), cancel=cancel)
            out["imports"].append({"file": str(path), "documents": result.docs_read, "resumed_from":
                                   result.resumed_from, "sentences_added": result.sentences_added,
                                   "duplicates": result.duplicates, "finished": result.finished})
        if args.label_with:
            labelled = label_corpus(project, args.name, args.label_with,
                                    progress=scaled(progress, (steps - 1) / steps, 1.0), cancel=cancel)
            out["labels"] = {"model": labelled.model_name, "labelled_now": labelled.labelled_now,
                             "total": labelled.total, "counts": labelled.label_counts}
        corpus = get_corpus(project, args.name)
        out["sentences"], out["version"] = corpus.sentence_count, corpus.version
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for row in out["imports"]:
            print(f"{row['file']}: {row['documents']:,} documents read, {row['sentences_added']:,} sentences added, "
                  f"{row['duplicates']:,} duplicates" + (" (file done)" if row["finished"] else ""))
        if "labels" in out:
            counts = ", ".join(f"{k} {v:,}" for k, v in out["labels"]["counts"].items())
            print(f"labelled {out['labels']['labelled_now']:,} now by {out['labels']['model']} ({counts})")
        print(f"corpus {args.name}: {out['sentences']:,} sentences (version {out['version']})")
    return EXIT_OK


@command("index")
def _add_index(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "index", parents=[PROJECT, JSON],
        help="embed a corpus's sentences and build its FAISS index (resumable; reopened when current)",
        description="Embed the sentences not yet embedded (memory-mapped .npy in the project's files folder), then "
        "build the index and store it beside them; an index that matches the corpus version, the encoder and the "
        "build settings is reopened instead.")
    p.add_argument("name", help="corpus name")
    _index_options(p)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=_run_index)


def _run_index(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import build_index
    from engine.store import Project

    params = kind_params(args)
    with Project.open(args.project) as project:
        name, options = _encoder_args(args, project)
        encoder = make_encoder(name, **options)
        built = build_index(project, args.name, encoder, kind=args.kind, params=params, seed=args.seed,
                            progress=progress, cancel=cancel)
    out = {"corpus": args.name, "kind": built.kind.name, "rows": built.rows, "encoder": encoder.key,
           "build": built.key["build"], "search": built.search, "built": built.built,
           "seconds": round(built.seconds, 3), "path": str(built.path)}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        verb = "built" if built.built else "reopened (already current)"
        print(f"{out['kind']} index of {out['rows']:,} sentences {verb} in {out['seconds']:.1f} s: {out['path']}")
    return EXIT_OK


@command("retrieve")
def _add_retrieve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrieve", parents=[PROJECT, JSON],
        help="counterfactual excerpts: the nearest corpus sentences whose label differs from the query's",
        description="For each query (the examples of --dataset, whole or per sentence, or --text with --label) "
        "print the k nearest corpus sentences that the labelling member (--model) labels differently, and their "
        "keywords. Dataset results are stored in the project; a rerun skips them.")
    p.add_argument("name", help="corpus name")
    p.add_argument("--model", required=True, help="the member that labelled the corpus")
    p.add_argument("--dataset", help="query with this dataset's examples (gold label = query label)")
    p.add_argument("--split", action="append", help="only this split (repeatable)")
    p.add_argument("--limit", type=int, help="only the first N examples")
    p.add_argument("--field", default="text", help="text field of the dataset (hypothesis for NLI)")
    p.add_argument("--per-sentence", action="store_true", help="one query per sentence of each text")
    p.add_argument("--text", action="append", help="a query text (repeatable; needs --label)")
    p.add_argument("--label", help="the label of the --text queries")
    p.add_argument("--target", help="--text queries: only excerpts with this label")
    p.add_argument("-k", type=int, default=5, help="excerpts per query (default 5)")
    p.add_argument("--diversity", type=float, default=0.0,
                   help="0 (default): the k nearest; up to 1: pick them by maximal marginal relevance (fewer "
                        "near-duplicates)")
    _index_options(p)
    p.set_defaults(run=_run_retrieve)


def _run_retrieve(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.cli.args import selected_example_ids
    from engine.retrieval.errors import RetrievalError
    from engine.retrieval.keywords import extract_keywords
    from engine.retrieval.retrieve import open_retriever, retrieve_for_examples
    from engine.store import Project
    from engine.store.runs import recorded_run

    if bool(args.dataset) == bool(args.text):
        raise RetrievalError("Give either --dataset or --text queries.", "Use one of the two.")
    if args.text and not args.label:
        raise RetrievalError("--text needs --label (the query's label).", "Add --label LABEL.")
    check_k_and_diversity(args)
    params = kind_params(args)
    with Project.open(args.project) as project:
        encoder_name, encoder_options = _encoder_args(args, project)
        retriever = open_retriever(project, args.name, args.model, encoder=encoder_name,
                                   encoder_options=encoder_options, kind=args.kind, params=params)
        if args.text:
            hits = retriever.search(args.text, [args.label] * len(args.text), k=args.k, diversity=args.diversity,
                                    targets=[args.target] * len(args.text) if args.target else None, cancel=cancel)
            results = [{"query": q, "query_label": args.label, "hits": [h.to_dict() for h in found],
                        "keywords": extract_keywords([h.text for h in found], exclude=q)}
                       for q, found in zip(args.text, hits, strict=True)]
        else:
            dataset = project.dataset(args.dataset)
            ids = selected_example_ids(project, dataset, args)
            with recorded_run(project, "retrieve", dataset.id, {"corpus": args.name, "model": args.model, "k": args.k,
                                                                "per_sentence": args.per_sentence,
                                                                "diversity": args.diversity,
                                                                "index": retriever.index.key,
                                                                "search": retriever.index.search}) as run:
                done = retrieve_for_examples(project, retriever, ids, k=args.k, per_sentence=args.per_sentence,
                                             field=args.field, diversity=args.diversity, run_id=run.id, progress=progress, cancel=cancel)
                run.result = {"computed": done.computed, "skipped": done.skipped, "settings_key": done.settings_key}
            results = done.results
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
    else:
        for r in results:
            where = f"#{r['example_id']}" + (f".{r['sentence_index']}" if r.get("sentence_index", -1) >= 0 else "") \
                if "example_id" in r else ""
            print(f"{where} [{r['query_label']}] {r['query']}".strip())
            for h in r["hits"]:
                print(f"    {h['score']:.3f} [{h['label']} {h['probability']:.2f}] {h['text']}")
            print(f"    keywords: {', '.join(r['keywords'])}")
    return EXIT_OK



@command("core")
def _add_core(sub: argparse._SubParsersAction) -> None:
    from engine.cli.generate_methods import add_generate_verb

    add_generate_verb(
        sub, "core", "core",
        help="generate --method core: excerpts of the target label retrieved from a corpus guide a minimal edit",
        description="The generate verb with --method core as its default. For each selected example: retrieve "
        "the nearest corpus excerpts that the labelling member (--member) gives the target label (stored; a rerun "
        "skips them), then ask the LLM for a minimal edit toward the target, offering the excerpts' content words. "
        "--method llm: the same prompt without retrieval (the baseline CORE is compared with). A rerun skips what "
        "was made and retries failures.")


@command("train-retriever")
def _add_train_retriever(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train-retriever", parents=[PROJECT, JSON],
        help="train a CF-DPR counterfactual retriever on (query, human counterfactual) pairs",
        description="Fine-tune the bundled MiniLM-L6 bi-encoder so that a query's nearest passage is its "
        "counterfactual (InfoNCE with in-batch negatives; hard negatives: the nearest same-label query and the "
        "query itself). --pairs is the CAD sentiment folder (the sentences annotators changed) or a CSV/TSV/JSONL "
        "with query and counterfactual columns (and optionally label). Part of the pairs is held out: top-1 is "
        "printed for the untrained and the trained encoder. The retriever is saved in the project's files folder "
        "(retrievers/NAME); use it with 'index/retrieve/core --retriever NAME'.")
    p.add_argument("name", help="retriever name (replaced if it exists)")
    p.add_argument("--pairs", required=True, type=Path, help="pairs file, or the CAD sentiment folder")
    p.add_argument("--limit", type=int, help="use only the first N pairs")
    p.add_argument("--holdout", type=float, default=0.2, help="fraction of the pairs held out (default 0.2)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=64, help="tokens per text (default 64)")
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-hard-negatives", action="store_true", help="in-batch negatives only")
    p.set_defaults(run=_run_train_retriever)


def _run_train_retriever(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.retrieval.dpr import evaluate_retriever, retriever_dir, train_retriever
    from engine.retrieval.pairs import read_pairs, split_pairs
    from engine.retrieval.encoders import make_encoder
    from engine.store import Project

    pairs = read_pairs(args.pairs, limit=args.limit)
    train, held_out = split_pairs(pairs, args.holdout, seed=args.seed)
    with Project.open(args.project) as project:
        folder = retriever_dir(project, args.name)
        before = evaluate_retriever(make_encoder("minilm-l6", max_length=args.max_length), held_out, cancel=cancel)
        done = train_retriever(train, out_dir=folder, epochs=args.epochs, batch_size=args.batch_size,
                               max_length=args.max_length, hard_negatives=not args.no_hard_negatives, lr=args.lr,
                               seed=args.seed, progress=scaled(progress, 0.0, 0.95), cancel=cancel)
        encoder = make_encoder("trained", path=folder, max_length=args.max_length)
        after = evaluate_retriever(encoder, held_out, cancel=cancel)
    out = {"retriever": args.name, "path": str(done.path), "encoder": encoder.key, "train_pairs": len(train),
           "held_out_pairs": len(held_out), "steps": done.steps, "seconds": round(done.seconds, 1),
           "losses": [round(x, 4) for x in done.losses], "untrained": before.to_dict(), "trained": after.to_dict()}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"retriever {args.name}: {len(train):,} pairs, {done.steps} steps in {done.seconds:.0f} s -> {done.path}")
        for what, scores in (("untrained minilm-l6", before), ("trained", after)):
            opposite = "" if scores.opposite_top1 is None else f", nearest other text of the other label " \
                f"{scores.opposite_top1:.3f}"
            print(f"{what}: top-1 {scores.top1:.3f} (among counterfactuals only {scores.top1_positives:.3f}{opposite}) "
                  f"on {scores.pairs:,} held-out pairs")
    return EXIT_OK
