"""Equivalence harness of counterbias generation: the same candidates and the same LLM requests, before and after
a change that should not alter behaviour.

Builds (once, into ``--base``) a project with two trained and voted datasets — the ten CAD dev sentences of the
tests' ``voted_project_template`` and twelve ordinary-length CAD dev reviews (40–160 words, seeded sample) — and
three small hand-voted datasets of the edit-mode tests. Then runs scenarios of ``generate`` (edit mode with its
defaults and with other settings, reconstruct mode, the edit-mode tests' scripted replies that make the
fresh try, the phrase swap, the removal, and the unmoved repair fire, a swap lost in transport),
each on a fresh copy of the base project against the loopback scripted LLM, and writes every candidate as
canonical JSON (``run_id`` and timestamps left out), each scenario's request count, the hashes of the requests sent
and the ``llm_cache`` keys::

    python benchmarks/generation_equivalence.py --base /tmp/gen_equiv_base --out /tmp/gen_before.json
    # ... change the code ...
    python benchmarks/generation_equivalence.py --base /tmp/gen_equiv_base --out /tmp/gen_after.json \\
        --compare /tmp/gen_before.json

The base project is reused as it is when it exists, so both runs read the same trained members and votes.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.engine.counterbias.conftest import TINY, short_reviews  # noqa: E402
from tests.engine.counterbias.scripted_llm import edit_sentence, scripted_reply, sentence_to_edit, words_to_keep  # noqa: E402
from tests.engine.llm.stub_server import StubServer  # noqa: E402

SHARED_DATA = REPO.parent / "shared" / "data"

REVIEW = "I watched it with my brother on Friday.  The plot is great and the music is lovely.\n\nThe cinema was cold."
TARGET = "The plot is great and the music is lovely."
RECOMMENDED = REVIEW + " I would recommend it to anyone."
SYNONYM = "The plot is superb and the music is lovely."

# ---------------------------------------------------------------------------- the base project


def _reviews(n: int = 12, seed: int = 50) -> list[tuple[str, str]]:
    with open(SHARED_DATA / "cad/sentiment/combined/dev.tsv", newline="", encoding="utf-8") as f:
        rows = [(text, label) for label, text in list(csv.reader(f, delimiter="\t"))[1:]]
    fitting = [r for r in rows if 40 <= len(r[0].split()) <= 160]
    return random.Random(seed).sample(fitting, n)


def _import(project: Any, folder: Path, name: str, rows: list[tuple[str, str]]) -> Any:
    from engine.io import ImportOptions, import_file

    src = folder / f"{name}.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(rows)
    return import_file(project, src, options=ImportOptions(name=name)).dataset


def _train_and_vote(project: Any, dataset: Any, prefix: str) -> None:
    from engine.attribution import VoteSettings, find_principal_words
    from engine.models import EnsembleConfig, MemberSpec, train_ensemble, train_preset

    train = train_preset("fast-cpu", epochs=1, max_length=64)
    config = EnsembleConfig(tuple(MemberSpec(f"{prefix}:{b}", b, {}, train) for b in TINY))
    train_ensemble(project, dataset.id, config)
    find_principal_words(project, dataset.id, [m.name for m in config.members], methods={"ig": {"n_steps": 8}},
                         vote=VoteSettings(k=3, rule="majority"), wordlists=("gender",))


def _hand_vote(project: Any, folder: Path, name: str, review: str, principal=("great",),
               spurious=("plot", "brother")) -> None:
    """A dataset of the edit-mode tests: ``review`` (Positive) and a second class, with a vote stored by hand."""
    from engine.store.schema import now

    dataset = _import(project, folder, name, [(review, "Positive"), ("Nothing else to see.", "Negative")])
    example_id = int(next(iter(project.iter_examples(dataset.id)))["id"])

    def store(conn):
        cursor = conn.execute("INSERT INTO vote_sets (vote_key, dataset_id, params, created_at) VALUES (?, ?, ?, ?)",
                              (f"hand-made-{name}", dataset.id, json.dumps({"models": []}), now()))
        conn.execute(
            "INSERT INTO word_votes (vote_set_id, example_id, field, principal, spurious, votes, member_words, "
            "created_at) VALUES (?, ?, 'text', ?, ?, ?, '{}', ?)",
            (cursor.lastrowid, example_id, json.dumps(list(principal)), json.dumps(list(spurious)),
             json.dumps({**{w: 3 for w in principal}, **{w: 1 for w in spurious}}), now()))

    project.writer.run(store)


def build_base(base: Path) -> Path:
    """The base project (built when missing): datasets short, reviews (trained, IG vote), multi, lovely, recommend."""
    from engine.store import Project

    path = base / "p.cbproj"
    if path.exists():
        return path
    base.mkdir(parents=True, exist_ok=True)
    project = Project.create(path)
    try:
        _train_and_vote(project, _import(project, base, "short", short_reviews(SHARED_DATA)), "r")
        _train_and_vote(project, _import(project, base, "reviews", _reviews()), "v")
        _hand_vote(project, base, "multi", REVIEW)
        _hand_vote(project, base, "lovely", REVIEW, spurious=("plot", "lovely"))
        _hand_vote(project, base, "recommend", RECOMMENDED)
    finally:
        project.close()
    return path


@contextmanager
def fresh_copy(path: Path) -> Iterator[Any]:
    from engine.store import Project

    with tempfile.TemporaryDirectory(prefix="gen-equiv-") as tmp:
        dst = Path(tmp) / path.name
        shutil.copy(path, dst)
        files = path.parent / f"{path.stem}_files"
        if files.exists():
            shutil.copytree(files, Path(tmp) / files.name)
        project = Project.open(dst)
        try:
            yield project
        finally:
            project.close()


# ---------------------------------------------------------------------------- scripted replies (test_edit_mode)


def _editing(body) -> bool:
    return sentence_to_edit(body) is not None


def _holding(body) -> bool:
    return "Opinion words to keep:" in body["messages"][-1]["content"]


def _swapping(body) -> bool:
    return "\nPhrase:" in body["messages"][-1]["content"]


def lovely_marked(held: Callable[[str], str] | None = None) -> Callable:
    def reply(body):
        sentence = sentence_to_edit(body)
        if sentence is None:
            return scripted_reply(body)
        edited = sentence.replace("great", "dreadful")
        if held is not None and _holding(body):
            return held(edited)
        return edited if "lovely" in words_to_keep(body) else edited.replace("lovely", "dreary")
    return reply


def fresh_reply(body):
    if not _editing(body):
        return scripted_reply(body)
    return edit_sentence(sentence_to_edit(body)) if body.get("seed") == 13 + 500 else sentence_to_edit(body)


def dropping(body):
    """Every edit drops the spurious "plot" (repair, fresh try and swap too)."""
    return edit_sentence(sentence_to_edit(body)).replace("plot", "story") if _editing(body) else scripted_reply(body)


def synonym(body):
    return SYNONYM if _editing(body) else scripted_reply(body)


def swap_kept_out(body):
    if _swapping(body):
        return "great" if "Phrase: great" in body["messages"][-1]["content"] else "superb"
    return synonym(body)


def stubborn(body):
    sentence = sentence_to_edit(body)
    if sentence is None:
        return scripted_reply(body)
    if "recommend" in sentence:
        return "I would recommend it to everyone."
    return sentence.replace("great", "awful").replace("lovely", "dull")


def half_flip(body):
    if not _editing(body):
        return scripted_reply(body)
    if "still reads as" in body["messages"][-1]["content"]:
        return "The plot is dull and the music is lovely."
    return "The plot is not great and the music is lovely."


def first_then(first: str, repaired: str) -> Callable:
    def reply(body):
        if not _editing(body):
            return scripted_reply(body)
        return repaired if "still reads as" in body["messages"][-1]["content"] else first
    return reply


def by_seed(first: str, repaired: str, fresh: str) -> Callable:
    def reply(body):
        if not _editing(body):
            return scripted_reply(body)
        if body.get("seed") == 513:
            return fresh
        return repaired if "still reads as" in body["messages"][-1]["content"] else first
    return reply


def lexicon_polar(project, members, token):
    score = {"great": 0.95, "superb": 0.99, "lovely": 0.6, "fine": 0.55, "awful": 0.02, "dreadful": 0.02, "poor": 0.1}

    def polar(sentences, label):
        out = []
        for s in sentences:
            found = [p for w, p in score.items() if w in s.lower()]
            p = min(found) if found else 0.5
            out.append(p if label == "Positive" else 1 - p)
        return out

    return polar


def lost_swap(body, attempt):
    if _swapping(body) and "Phrase: lovely" in body["messages"][-1]["content"]:
        return "500" if attempt == 1 else "ok"
    return "ok"


NO_FLIP = {"swap_gender": False}  # named when the flip repair could be turned off; the stage is gone
LEXICON = {"swap_gender": False, "edit_polar": 0.0, "sentence_reader": "members"}

#: name -> (dataset, first example only, reply, settings, options)
SCENARIOS: dict[str, tuple[str, bool, Callable, dict[str, Any], dict[str, Any]]] = {
    "short-edit-default": ("short", False, scripted_reply, {}, {}),
    "short-edit-triples-samples2": ("short", False, scripted_reply, {"edit_triples": True, "samples": 2}, {}),
    "short-reconstruct": ("short", False, scripted_reply, {"mode": "reconstruct"}, {}),
    "reviews-edit-default": ("reviews", False, scripted_reply, {}, {}),
    "reviews-edit-samples2": ("reviews", False, scripted_reply, {"samples": 2, "temperature": 0.3}, {}),
    "reviews-edit-members-reader": ("reviews", False, scripted_reply, {"sentence_reader": "members"}, {}),
    "reviews-reconstruct": ("reviews", False, scripted_reply, {"mode": "reconstruct"}, {}),
    "multi-default": ("multi", True, scripted_reply, {}, {"judge": ()}),
    "multi-fresh-strong": ("multi", True, fresh_reply, NO_FLIP, {"judge": ()}),
    "multi-fresh-dropped-word": ("multi", True, dropping, NO_FLIP, {"judge": ()}),
    "multi-swap": ("multi", True, synonym, NO_FLIP, {"judge": ()}),
    "multi-swap-kept-out": ("multi", True, swap_kept_out, NO_FLIP, {"judge": ()}),
    "lovely-released": ("lovely", True, lovely_marked(), NO_FLIP, {"judge": ()}),
    "recommend-remove": ("recommend", True, stubborn, {**NO_FLIP, "edit_swap": False}, {"judge": ()}),
    "recommend-drop-unmoved": ("recommend", True, stubborn, {**NO_FLIP, "edit_swap": False, "edit_remove": False},
                               {"judge": ()}),
    "lexicon-unmoved-repaired": ("multi", True, first_then("The plot is fine and the music is lovely.",
                                                           "The plot is dreadful and the music is lovely."),
                                 LEXICON, {"judge": ["r:tiny-distilbert"], "lexicon": True}),
    "lexicon-settle-fresh": ("multi", True, by_seed("The plot is fine and the music is lovely.",
                                                    "The plot is great, truly great, and the music is lovely.",
                                                    "The plot is dreadful and the music is lovely."),
                             LEXICON, {"judge": ["r:tiny-distilbert"], "lexicon": True}),
    "lexicon-wrong-way": ("multi", True, lambda b: "The plot is great and the music is superb." if _editing(b)
                          else scripted_reply(b), LEXICON, {"judge": ["r:tiny-distilbert"], "lexicon": True}),
    "multi-swap-lost-twice": ("multi", True, synonym, NO_FLIP, {"judge": (), "plan": lost_swap, "retries": 0,
                                                                "runs": 2}),
}


# ---------------------------------------------------------------------------- running


def _request_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:20]


def _candidate(row: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in row["meta"].items() if k != "run_id"}
    return {"example_id": row["example_id"], "target": row["target_label"], "status": row["status"],
            "text": row["text"], "premise": row["premise"], "hypothesis": row["hypothesis"],
            "meta": meta, "scores": row["scores"]}


def run_scenario(base: Path, name: str) -> dict[str, Any]:
    from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
    from engine.llm.config import LLMConfig
    import engine.counterbias.sentence_reading as sentence_reading

    dataset_name, first_only, reply, settings, options = SCENARIOS[name]
    bodies: list[dict[str, Any]] = []
    patched = sentence_reading.members_polar
    if options.get("lexicon"):
        sentence_reading.members_polar = lexicon_polar
    try:
        with fresh_copy(base) as project, StubServer(options.get("plan"),
                                                     reply=lambda b: bodies.append(b) or reply(b)) as server:
            config = LLMConfig(backend="openai", model="stub", base_url=server.base_url,
                               **({"max_retries": options["retries"]} if "retries" in options else {}))
            dataset = project.dataset(dataset_name)
            ids = [int(r["id"]) for r in project.iter_examples(dataset.id)]
            ids = ids[:1] if first_only else None
            kwargs = {"judge": options["judge"]} if "judge" in options else {}
            summaries = []
            for _ in range(options.get("runs", 1)):
                result = generate_counterbias(project, dataset.id, ids, config, settings=GenerateSettings(**settings),
                                              **kwargs)
                summaries.append({k: v for k, v in result.summary().items()
                                  if k not in ("seconds", "usage", "llm_time")})
            rows = candidate_rows(project, dataset_id=dataset.id)
            keys = sorted(r[0] for r in project.db.execute("SELECT key FROM llm_cache").fetchall())
            count = server.count
    finally:
        sentence_reading.members_polar = patched
    return {"candidates": [_candidate(r) for r in rows], "summaries": summaries, "requests": count,
            "request_hashes": sorted({_request_hash(b) for b in bodies}), "llm_cache_keys": keys}


def compare(before: dict[str, Any], after: dict[str, Any]) -> bool:
    same_all = True
    total = 0
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            print(f"{name}: only in {'after' if a is None else 'before'}")
            same_all = False
            continue
        cands = json.dumps(a["candidates"], sort_keys=True) == json.dumps(b["candidates"], sort_keys=True)
        new = set(b["request_hashes"]) - set(a["request_hashes"])
        gone = set(a["request_hashes"]) - set(b["request_hashes"])
        keys = a["llm_cache_keys"] == b["llm_cache_keys"]
        same = cands and not new and not gone and keys and a["requests"] == b["requests"] \
            and a["summaries"] == b["summaries"]
        same_all &= same
        total += len(a["candidates"])
        print(f"{name}: {len(a['candidates'])} candidates identical={cands} requests {a['requests']} -> "
              f"{b['requests']} new={len(new)} missing={len(gone)} cache keys identical={keys}"
              + ("" if same else "  <-- DIFFERS"))
    print(f"total: {total} candidates in {len(before)} scenarios; identical: {'yes' if same_all else 'NO'}")
    return same_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, default=Path(tempfile.gettempdir()) / "gen_equiv_base")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="an earlier --out to compare with")
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    args = parser.parse_args(argv)
    if not SHARED_DATA.is_dir():
        print(f"{SHARED_DATA} is missing", file=sys.stderr)
        return 2
    base = build_base(args.base)
    out = {}
    for name in args.only or SCENARIOS:
        out[name] = run_scenario(base, name)
        print(f"{name}: {len(out[name]['candidates'])} candidates, {out[name]['requests']} requests", flush=True)
    args.out.write_text(json.dumps(out, sort_keys=True, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if args.compare:
        return 0 if compare(json.loads(args.compare.read_text(encoding="utf-8")), out) else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
