"""CAD sentiment downstream rows with generated candidates (issue 12, item 5): do the product's candidates help?

Two steps, each resumable (the projects keep every vote, LLM answer and candidate, so a rerun
continues where the last one stopped):

1. **generate** — in the generation project (``--gen-project``: CAD sentiment *orig* train,
   with dev as its dev split; members trained with ``--preset`` unless already there: the same
   members as ``benchmarks/coba_quality.py``, so its project can be copied and reused),
   ``--originals`` CAD train originals that have a human revision (the shortest ones by
   default, since each sentence costs an LLM request on a CPU; ``--sample`` for a seeded
   sample) are voted on (the Word importance panel's default methods) and go through the
   default edit-mode generation with the bundled model, ``--chunk`` originals per call. The
   made candidates (one per original, labelled with their target) and the human revisions of
   the same originals are written to CSV.
2. **evaluate** (``--evaluate``; ``--from-csv DIR`` evaluates the CSVs of an earlier generation, without
   generating) — in the downstream project of ``benchmarks/cad_downstream.py`` (``--project``; created with
   the originals and the test sets when missing), the two CSVs become datasets and four conditions are trained over seeds:
   D_ori (the 1,707 originals), D_ori + the generated candidates, D_ori + the human revisions of
   the same originals (the same count), and the size control D_ori + as many IMDb train originals
   that are not CAD's (when ``imdb_maas`` is in ``../shared``; a seeded sample per seed). Tested on
   CAD dev originals, CAD dev revisions and the contrast-set dev. ``--passing`` uses only the candidates the accept rule passes (their human
   revisions alike). Also the diversity of the generated vs the human edits of those originals.

3. **CORE** (``--method core``, after step 1) — CORE's retrieve-then-edit with the same LLM on the
   originals CoBA made a candidate for (a corpus of the sentences of ``--corpus-docs`` IMDb train
   reviews that are no CAD original, labelled by the fine-tuned MiniLM-L6 member, a flat index),
   judged by the same members; evaluated as D_ori, + CORE, + CoBA of the same originals, + the human
   revisions of the same originals and the size control.

Run::

    nice -n 10 python benchmarks/cad_generated.py --originals 300            # generate (hours on 2 cores)
    nice -n 10 python benchmarks/cad_generated.py --originals 300 --evaluate --classifier tfidf-lr
    nice -n 10 python benchmarks/cad_generated.py --originals 300 --method core --evaluate   # CORE beside CoBA

A time budget (``--minutes``) stops generation between chunks; what is made is kept.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
DATA = ROOT.parent / "shared" / "data"
CAD = DATA / "cad" / "sentiment"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _revisions() -> dict[str, dict[str, str]]:
    """CAD paired train: each original's normalised text → its human revision row."""
    with open(CAD / "combined/paired/train_paired.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return {_norm(rows[k]["Text"]): rows[k + 1] for k in range(0, len(rows) - 1, 2)}


def _chunks(ids: list[int], size: int, minutes: float):
    """``(start, ids[start:start + size])`` until the time budget (``minutes``; 0: none) is spent."""
    deadline = time.monotonic() + 60 * minutes if minutes else None
    for start in range(0, len(ids), size):
        if deadline is not None and time.monotonic() > deadline:
            print(f"time budget spent after {start} originals; rerun to continue", file=sys.stderr)
            return
        yield start, ids[start:start + size]


def generate(args: argparse.Namespace) -> tuple[Path, Path]:
    """Step 1; returns the CSVs of generated candidates and of the same originals' human revisions."""
    from engine.attribution import VoteSettings, find_principal_words
    from engine.attribution.explainers import default_explainers
    from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
    from engine.io import ImportOptions, import_file
    from engine.llm.config import LLMConfig
    from engine.models import MemberSpec, train_ensemble, train_preset
    from engine.models.config import EnsembleConfig
    from engine.models.store import get_model
    from engine.store import ExampleQuery, Project

    path: Path = args.gen_project
    path.parent.mkdir(parents=True, exist_ok=True)
    project = Project.open(path) if path.exists() else Project.create(path)
    with project:
        if "cad-train" not in {d.name for d in project.datasets()}:
            train = import_file(project, CAD / "orig" / "train.tsv", options=ImportOptions(name="cad-train"))
            import_file(project, CAD / "orig" / "dev.tsv",
                        options=ImportOptions(append_to=train.dataset.id, split="dev"))
        dataset = project.dataset("cad-train")
        from engine.models.config import DEFAULT_MEMBERS
        from engine.models.device import default_preset

        preset = args.preset or default_preset()
        members = []
        for b in args.members.split(",") if args.members else DEFAULT_MEMBERS:  # a sized preset depends on the backbone
            spec = MemberSpec(f"bench-{b}", b, {}, train_preset(preset, b))
            trained = train_ensemble(project, dataset.id, EnsembleConfig((spec,)))
            members.append(spec.name)
            print(f"member {spec.name}: dev accuracy {trained.members[0].dev_accuracy:.3f}", file=sys.stderr)
        revision_of = _revisions()
        train_rows = project.examples(project.example_ids(ExampleQuery(dataset.id, splits=("train",))))
        usable = [r for r in train_rows if _norm(r["text"]) in revision_of
                  and _norm(revision_of[_norm(r["text"])]["Text"]) != _norm(r["text"])]
        if args.sample:
            chosen = random.Random(args.seed).sample(usable, min(args.originals, len(usable)))
        else:
            chosen = sorted(usable, key=lambda r: (len(r["text"]), r["id"]))[: args.originals]
        # in the order chosen (length or sample), not by id: CAD's files list one label first, so an id-ordered run
        # stopped early (--minutes) would hold only edits toward one label
        ids = [int(r["id"]) for r in chosen]
        originals = {int(r["id"]): r for r in chosen}
        words = sum(len(originals[i]["text"].split()) for i in ids) / max(len(ids), 1)
        print(f"{len(ids)} CAD train originals ({'seeded sample' if args.sample else 'shortest'}), "
              f"{words:.0f} words on average", file=sys.stderr)
        if args.base_url:  # a server already running (vLLM, llama.cpp): the same requests, sent over HTTP
            config = LLMConfig(backend="openai", model=args.model, base_url=args.base_url, concurrency=1,
                               params={"temperature": 0.0, "seed": 0})
        else:
            config = LLMConfig(backend="local", model=args.model, concurrency=1, params={"temperature": 0.0, "seed": 0},
                               options={"n_threads": args.threads} if args.threads else {})
        if args.method == "core":
            return _generate_core(args, project, dataset, ids, originals, members, config, revision_of)
        settings = GenerateSettings()
        vote_settings = VoteSettings()
        # the app's explainers: a member trained only on its top layer judges but does not explain
        explainers = [m.name for m in default_explainers([get_model(project, n) for n in members])]
        for start, chunk in _chunks(ids, args.chunk, args.minutes):
            made = {int(r["example_id"]) for r in candidate_rows(project, example_ids=chunk)
                    if r["status"] != "failed" and r["meta"].get("settings_key") == settings.key()}
            todo = [i for i in chunk if i not in made]
            if not todo:
                continue
            t0 = time.perf_counter()
            vote = find_principal_words(project, dataset.id, explainers, vote=vote_settings, wordlists=("gender",),
                                        example_ids=todo)
            result = generate_counterbias(project, dataset.id, todo, config, vote_set_id=vote.vote_set_id,
                                          settings=settings)
            print(f"originals {start + len(chunk)}/{len(ids)}: {len(result.created)} made, {len(result.failed)} "
                  f"failed, {result.sent} requests, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        rows = [r for r in candidate_rows(project, example_ids=ids)
                if r["status"] != "failed" and r["meta"].get("settings_key") == settings.key()]
    first: dict[int, dict] = {}
    for r in rows:
        first.setdefault(int(r["example_id"]), r)
    if args.passing:
        first = {k: r for k, r in first.items() if r["scores"].get("passes")}
    out = path.parent
    gen_csv, human_csv = out / "generated.csv", out / "human_same.csv"
    with open(gen_csv, "w", encoding="utf-8", newline="") as g, open(human_csv, "w", encoding="utf-8", newline="") as h:
        gw, hw = csv.writer(g), csv.writer(h)
        gw.writerow(["text", "label"])
        hw.writerow(["text", "label"])
        for k in sorted(first):
            human = revision_of[_norm(originals[k]["text"])]
            gw.writerow([first[k]["text"], first[k]["target_label"]])
            hw.writerow([human["Text"], human["Sentiment"]])
    print(f"{len(first)} of {len(ids)} originals have a{' passing' if args.passing else ''} candidate: "
          f"{gen_csv}, {human_csv}", file=sys.stderr)
    return gen_csv, human_csv


#: The corpus CORE retrieves from: sentences of IMDb train reviews that are no CAD original (train or dev), so no
#: test text is retrieved; labelled by the fine-tuned MiniLM-L6 member.
CORE_CORPUS, CORE_LABELLER = "imdb-extra", "bench-minilm-l6"


def _generate_core(args: argparse.Namespace, project, dataset, ids: list[int], originals: dict, members: list[str],
                   config, revision_of: dict) -> tuple[Path, Path]:
    """CORE's retrieve-then-edit (the app's defaults: per-sentence retrieval, k = 5) on the originals CoBA made a
    candidate for, judged by the same members; writes ``core/generated.csv`` (CORE), ``core/coba_same.csv``
    (CoBA's candidates of the same originals) and ``core/human_same.csv``."""
    from cad_downstream import _imdb_extra

    from engine.counterbias import GenerateSettings, candidate_rows
    from engine.counterbias.retrieve_edit import RetrievalSettings, core_edit
    from engine.retrieval.corpus import import_corpus, label_corpus, list_corpora
    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import build_index

    log = lambda f, m="": print(f"\r[{f:6.1%}] {m[:100]:100}", end="", file=sys.stderr)  # noqa: E731
    if CORE_CORPUS not in {c.name for c in list_corpora(project)}:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            import_corpus(project, CORE_CORPUS, _imdb_extra(Path(tmp)), text_column="text",
                          limit_docs=args.corpus_docs, progress=log)
        label_corpus(project, CORE_CORPUS, CORE_LABELLER, progress=log)
        build_index(project, CORE_CORPUS, make_encoder("minilm-l6"), kind="flat", progress=log)
        print(f"\ncorpus imported, labelled and indexed in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    coba_key = GenerateSettings().key()
    coba = {}
    for r in candidate_rows(project, example_ids=ids):
        if r["status"] != "failed" and r["method"] != "core" and r["meta"].get("settings_key") == coba_key:
            coba.setdefault(int(r["example_id"]), r)
    todo_all = [i for i in ids if i in coba]
    retrieval = RetrievalSettings(corpus=CORE_CORPUS, model=CORE_LABELLER, k=5, kind="flat")
    for start, chunk in _chunks(todo_all, args.chunk, args.minutes):
        t0 = time.perf_counter()
        result = core_edit(project, dataset.id, chunk, config, retrieval, judge=members)
        summary = result.summary()
        print(f"CORE {start + len(chunk)}/{len(todo_all)}: {summary['created']} made, {summary['failed']} failed, "
              f"{summary['skipped']} already made, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    core = {}
    for r in candidate_rows(project, example_ids=todo_all):
        if r["status"] != "failed" and r["method"] == "core":
            core.setdefault(int(r["example_id"]), r)
    if args.passing:
        core = {k: r for k, r in core.items() if r["scores"].get("passes")}
    out = args.gen_project.parent / "core"
    out.mkdir(exist_ok=True)
    files = {name: out / f"{name}.csv" for name in ("generated", "coba_same", "human_same")}
    writers = {}
    handles = [open(path, "w", encoding="utf-8", newline="") for path in files.values()]
    try:
        for name, handle in zip(files, handles, strict=True):
            writers[name] = csv.writer(handle)
            writers[name].writerow(["text", "label"])
        for k in sorted(core):
            human = revision_of[_norm(originals[k]["text"])]
            writers["generated"].writerow([core[k]["text"], core[k]["target_label"]])
            writers["coba_same"].writerow([coba[k]["text"], coba[k]["target_label"]])
            writers["human_same"].writerow([human["Text"], human["Sentiment"]])
    finally:
        for handle in handles:
            handle.close()
    print(f"{len(core)} of {len(todo_all)} originals with a CoBA candidate have a"
          f"{' passing' if args.passing else ''} CORE candidate: {out}", file=sys.stderr)
    return files["generated"], files["human_same"]


def evaluate(args: argparse.Namespace, gen_csv: Path, human_csv: Path) -> None:
    """Step 2: the downstream conditions in the cad_downstream project."""
    from cad_downstream import add_imdb_extra, evaluate_and_print, open_project

    from engine.evaluation.conditions import parse_condition
    from engine.evaluation.diversity_report import pair_diversity
    from engine.io import ImportOptions, import_file

    with open(gen_csv, encoding="utf-8", newline="") as f:
        n = sum(1 for _ in csv.DictReader(f))
    core = args.method == "core"
    tag = f"{'core-' if core else ''}{n}{'-passing' if args.passing else ''}"
    coba_csv = gen_csv.parent / "coba_same.csv"  # CORE's run: CoBA's candidates of the same originals
    sources = [(f"generated-{tag}", gen_csv), (f"human-same-{tag}", human_csv)]
    if core and coba_csv.exists():
        sources.append((f"coba-same-{tag}", coba_csv))
    with open_project(args.project, imdb=False) as project:
        size_control = add_imdb_extra(project)  # as many more originals: does any extra text help as much?
        names = {d.name for d in project.datasets()}
        for name, src in sources:
            if name not in names:
                # a partial run may hold edits toward one label only
                import_file(project, src, options=ImportOptions(name=name, split="train",
                                                                labels=("Negative", "Positive")))
        conditions = [
            parse_condition("D_ori=cad-orig-train"),
            parse_condition(f"+{n} {'CORE' if core else 'generated'}=cad-orig-train+generated-{tag}"),
            *([parse_condition(f"+{n} CoBA (same originals)=cad-orig-train+coba-same-{tag}")]
              if len(sources) > 2 else []),
            parse_condition(f"+{n} human revisions (same originals)=cad-orig-train+human-same-{tag}"),
            *([parse_condition(f"+{n} IMDb originals (size control)=cad-orig-train+imdb-extra@{n}")]
              if size_control else []),
        ]
        evaluate_and_print(project, conditions, args.classifier, args.seeds, args.classifier_preset)
    revision_of = _revisions()
    with open(gen_csv, encoding="utf-8", newline="") as f:
        generated = [r["text"] for r in csv.DictReader(f)]
    with open(human_csv, encoding="utf-8", newline="") as f:
        human = [r["text"] for r in csv.DictReader(f)]
    parent_of = {_norm(r["Text"]): o for o, r in revision_of.items()}
    parents = [parent_of.get(_norm(h), "") for h in human]
    groups = [("CORE" if core else "generated", generated), ("human revisions", human)]
    if len(sources) > 2:
        with open(coba_csv, encoding="utf-8", newline="") as f:
            groups.insert(1, ("CoBA (same originals)", [r["text"] for r in csv.DictReader(f)]))
    for label, edits in groups:
        report = pair_diversity(edits, parents)
        print(f"{label} vs their originals ({len(edits)}): "
              + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in report.as_dict().items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gen-project", type=Path,
                        default=Path(tempfile.gettempdir()) / "cad_generated" / "cad.cbproj")
    parser.add_argument("--project", type=Path, default=Path(tempfile.gettempdir()) / "cad_downstream.cbproj",
                        help="the downstream project of benchmarks/cad_downstream.py")
    parser.add_argument("--originals", type=int, default=300)
    parser.add_argument("--sample", action="store_true", help="a seeded sample instead of the shortest originals")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--members", default=None, help="backbones (default: the default ensemble; every member "
                        "judges, the default explainers explain)")
    parser.add_argument("--preset", default=None,
                        help="training preset of the members (default: the app's for this machine, as coba_quality.py)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--base-url", default=None,
                        help="an OpenAI-compatible server to send the requests to instead of starting the bundled "
                             "model (e.g. http://127.0.0.1:8000/v1)")
    parser.add_argument("--threads", type=int, default=None,
                        help="LLM CPU threads (default: the product's, which follow the machine's load)")
    parser.add_argument("--chunk", type=int, default=25, help="originals per generation call")
    parser.add_argument("--minutes", type=float, default=0, help="stop generating after this long (0: no limit)")
    parser.add_argument("--passing", action="store_true", help="only candidates the accept rule passes")
    parser.add_argument("--evaluate", action="store_true", help="also train and test the downstream conditions")
    parser.add_argument("--classifier", default="tfidf-lr")
    parser.add_argument("--classifier-preset", default=None,
                        help="training preset of a backbone:<name> classifier (e.g. sample-cpu; default: fast-cpu)")
    parser.add_argument("--from-csv", type=Path, default=None,
                        help="skip generation: evaluate generated.csv and human_same.csv of this folder (e.g. on a "
                             "GPU machine without the LLM)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--method", choices=("coba", "core"), default="coba",
                        help="core: CORE's retrieve-then-edit on the originals CoBA made a candidate for (after the "
                             "CoBA run), evaluated beside CoBA's candidates of the same originals")
    parser.add_argument("--corpus-docs", type=int, default=3000,
                        help="CORE's corpus: the sentences of this many IMDb train reviews that are no CAD original")
    args = parser.parse_args()
    if args.from_csv is not None:
        folder = args.from_csv / "core" if args.method == "core" and (args.from_csv / "core").is_dir() else args.from_csv
        gen_csv, human_csv = folder / "generated.csv", folder / "human_same.csv"
    else:
        gen_csv, human_csv = generate(args)
    if args.evaluate or args.from_csv is not None:
        evaluate(args, gen_csv, human_csv)


if __name__ == "__main__":
    main()
