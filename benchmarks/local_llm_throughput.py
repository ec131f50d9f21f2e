"""Counterbias examples per hour from the bundled model: one llama.cpp slot vs parallel slots, in one run.

Takes the N shortest CAD dev reviews (``../shared/data/cad/sentiment/orig/dev.tsv``, see its
SOURCE.md), imports them into a temporary project, trains a tiny 3-member ensemble (random
tiny encoders, 1 epoch: only to have a real vote giving principal words, as the tests do) and
votes with IG. Then it runs the real engine step, :func:`engine.counterbias.generate_counterbias`
(triples -> targeted rewrite -> reconstruct), twice with the local backend on copies of that
project, each with a fresh (empty) LLM cache:

* sequential: ``n_parallel = 1`` (one request at a time, as before);
* parallel: ``n_parallel = --slots`` (requests of a step decoded together).

The model is loaded before the clock starts. For each it prints wall time, LLM requests,
candidates made, *examples per hour* (candidates that passed the generation checks, per hour)
and the *share of slots whose candidate passed the checks* (parallelism must not cost quality),
then the ratio of the two rates, each mode's requests by prompt, and where the time went (llama.cpp's timings of
every request: seconds reading the prompt's new tokens and writing the answer, per prompt, and the share of
prompt tokens taken from the prompt cache). Goal: >= 3x on the full size.

    python benchmarks/local_llm_throughput.py [--n 40] [--model qwen2.5-coder-1.5b] [--slots 4] [--threads N]
    python benchmarks/local_llm_throughput.py --compare threads [--n 8]
    python benchmarks/local_llm_throughput.py --compare triples|before [--n 8]

``--compare threads`` runs one slot twice instead: CPU threads fixed to every core but one (the
default before the threads followed the load) vs the default (every core while the machine is
free, :mod:`engine.llm.cpu_threads`); run it on an otherwise idle machine. ``--compare triples``:
edit mode with every sentence's fact triples extracted first (``edit_triples``, the default
before) vs the default (sentences chosen by their words, no triple request). ``--compare
before``: both former defaults together (fixed threads and triples) vs today's.

Small check: ``--n 4 --model smollm2-135m`` (SmolLM2 fails most of the task; it only proves the plumbing).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAD_DEV = ROOT.parent / "shared" / "data" / "cad" / "sentiment" / "orig" / "dev.tsv"
TINY = ("tiny-distilbert", "tiny-roberta", "tiny-mpnet")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run the checkout's engine, not an installed one


def shortest_reviews(path: Path, n: int) -> list[tuple[str, str]]:
    """The ``n`` shortest reviews of a CAD sentiment file as ``(text, label)``, shortest first."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [(text, label) for label, text in list(csv.reader(f, delimiter="\t"))[1:]]
    return sorted(rows, key=lambda r: (len(r[0]), r[0]))[:n]


def voted_project(folder: Path, reviews: list[tuple[str, str]]) -> Path:
    """A project file holding ``reviews``, a tiny trained ensemble and an IG vote on every review."""
    from engine.attribution import VoteSettings, find_principal_words
    from engine.io import ImportOptions, import_file
    from engine.models import EnsembleConfig, MemberSpec, train_ensemble, train_preset
    from engine.store import Project

    src = folder / "reviews.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(reviews)
    path = folder / "template.cbproj"
    with Project.create(path) as project:
        ds = import_file(project, src, options=ImportOptions(name="reviews")).dataset
        config = EnsembleConfig(tuple(MemberSpec(f"r:{b}", b, {}, train_preset("fast-cpu", epochs=1, max_length=128))
                                      for b in TINY))
        train_ensemble(project, ds.id, config)
        find_principal_words(project, ds.id, [m.name for m in config.members], methods={"ig": {"n_steps": 8}},
                             vote=VoteSettings(k=5), wordlists=("gender",))
    return path


def copy_project(template: Path, name: str) -> Path:
    """A copy of the template project (and its model folder): a fresh, empty LLM cache."""
    dst = template.parent / f"{name}.cbproj"
    shutil.copy(template, dst)
    files = template.parent / f"{template.stem}_files"
    if files.exists():
        shutil.copytree(files, template.parent / f"{name}_files")
    return dst


def prompt_of(systems: dict[str, str], request: str) -> str:
    """The prompt file a cached ``request`` (JSON) came from, told by its system message (a repair or a second ask
    continues its first request's messages and counts under that prompt; ``other`` when no file under
    ``resources/prompts`` has it)."""
    messages = json.loads(request).get("messages") or [{}]
    return systems.get(messages[0].get("content", ""), "other")


def prompt_systems() -> dict[str, str]:
    """System message -> prompt name, for every prompt file under ``resources/prompts``."""
    from engine.llm.prompts import load_prompt

    systems: dict[str, str] = {}
    for name in sorted(f.stem for f in (ROOT / "resources" / "prompts").glob("*.md")):
        first = load_prompt(name).messages[0]
        if first["role"] == "system":
            systems.setdefault(first["content"], name)
    return systems


def requests_by_prompt(requests: Iterable[str]) -> dict[str, int]:
    """How many of the cached ``requests`` (JSON) each prompt file made, most first (see :func:`prompt_of`)."""
    systems = prompt_systems()
    counts: dict[str, int] = {}
    for request in requests:
        name = prompt_of(systems, request)
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def time_by_prompt(rows: Iterable[tuple[str, str]]) -> dict[str, dict]:
    """Per prompt file, from cached ``(request, usage)`` rows: requests, prompt tokens read anew and from the
    server's cache, tokens written, and the server's seconds reading and writing (llama.cpp's timings), most
    time first."""
    from engine.llm.base import Usage

    systems = prompt_systems()
    sums: dict[str, tuple[int, Usage]] = {}
    for request, usage in rows:
        name = prompt_of(systems, request)
        n, total = sums.get(name, (0, Usage()))
        sums[name] = (n + 1, total + Usage.from_dict(json.loads(usage or "{}")))
    out = {name: {"requests": n, "prompt_tokens": u.prompt_tokens, "cached_tokens": u.cached_tokens,
                  "completion_tokens": u.completion_tokens, "prompt_s": round(u.prompt_ms / 1000, 1),
                  "decode_s": round(u.decode_ms / 1000, 1)} for name, (n, u) in sums.items()}
    return dict(sorted(out.items(), key=lambda kv: -(kv[1]["prompt_s"] + kv[1]["decode_s"])))


def run_mode(template: Path, name: str, model: str, slots: int, threads: int | None, max_tokens: int,
             **settings: object) -> dict:
    """Generate one candidate per review with ``slots`` llama.cpp slots (and ``settings`` of the generation);
    timings and pass rate."""
    from engine.counterbias import GenerateSettings, generate_counterbias
    from engine.llm.config import LLMConfig
    from engine.llm.local_backend import LocalBackend
    from engine.store import Project

    options = {"n_parallel": slots, **({"n_threads": threads} if threads else {})}
    config = LLMConfig(backend="local", model=model, params={"temperature": 0.0, "max_tokens": max_tokens, "seed": 0},
                       options=options)
    backend = LocalBackend(config)
    backend.load()
    try:
        with Project.open(copy_project(template, name)) as project:
            ds = project.dataset("reviews")
            ids = [int(r["id"]) for r in project.iter_examples(ds.id)]
            assert project.db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0, "cache not fresh"
            switches: list[int] = []  # thread counts the model was loaded again with (the load followed)
            reload = backend._reload

            def counted_reload(threads: int) -> None:
                switches.append(int(threads))
                reload(threads)

            backend._reload = counted_reload
            t0 = time.perf_counter()
            result = generate_counterbias(project, ds.id, ids, config, backend=backend, judge=(),
                                          settings=GenerateSettings(temperature=0.0, drop_prob=0.0, **settings))
            seconds = time.perf_counter() - t0
            # every step's requests (the triple step has its own client): the cache was empty before
            sent = int(project.db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])
            cached = project.db.execute("SELECT request, usage FROM llm_cache").fetchall()
            by_prompt = requests_by_prompt(r[0] for r in cached)
            timed = time_by_prompt(cached)
    finally:
        backend.close()
    made, failed = len(result.created), len(result.failed)
    slots_total = made + failed
    return {
        "mode": name, "runs_on": backend.describe(), "seconds": round(seconds, 1), "requests_sent": sent,
        "requests_by_prompt": by_prompt, "time_by_prompt": timed, "llm_time": result.usage.time_split(),
        "thread_switches": switches,
        "slots": slots_total, "made": made, "failed": failed,
        "examples_per_hour": round(made / seconds * 3600, 1) if seconds else 0.0,
        "slots_per_hour": round(slots_total / seconds * 3600, 1) if seconds else 0.0,
        "pass_share": round(made / slots_total, 3) if slots_total else 0.0,
        "tokens": result.usage.to_dict(),
    }


def main() -> int:
    from engine.llm.local_backend import default_threads

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40, help="CAD dev reviews (shortest first; default 40)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="bundled model")
    parser.add_argument("--slots", type=int, default=4, help="slots of the parallel run (default 4)")
    parser.add_argument("--threads", type=int, default=None, help=f"CPU threads (default {default_threads()})")
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--data", type=Path, default=CAD_DEV)
    parser.add_argument("--compare", choices=("slots", "threads", "triples", "before"), default="slots",
                        help="slots: 1 slot vs --slots; threads: fixed threads (every core but one) vs the default; "
                        "triples: edit mode with every sentence's triples extracted (the default before) vs without; "
                        "before: both former defaults (fixed threads, triples) vs today's")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"CAD not found at {args.data} (see ../shared/data/cad/SOURCE.md)", file=sys.stderr)
        return 2
    reviews = shortest_reviews(args.data, args.n)
    with tempfile.TemporaryDirectory(prefix="cb-llm-throughput-") as tmp:
        t0 = time.perf_counter()
        template = voted_project(Path(tmp), reviews)
        print(f"{len(reviews)} reviews imported, tiny ensemble trained and voted in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
        rows = []
        modes = {
            "slots": (("sequential", 1, args.threads, {}), ("parallel", args.slots, args.threads, {})),
            "threads": (("fixed-threads", 1, default_threads(), {"edit_triples": True}),
                        ("load-threads", 1, None, {"edit_triples": True})),
            "triples": (("triples", 1, args.threads, {"edit_triples": True}), ("no-triples", 1, args.threads, {})),
            "before": (("before", 1, default_threads(), {"edit_triples": True}), ("now", 1, None, {})),
        }[args.compare]
        for name, slots, threads, settings in modes:
            rows.append(run_mode(template, name, args.model, slots, threads, args.max_tokens, **settings))
            print(f"{name}: {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    seq, par = rows
    ratio = par["examples_per_hour"] / seq["examples_per_hour"] if seq["examples_per_hour"] else float("nan")
    slot_ratio = par["slots_per_hour"] / seq["slots_per_hour"] if seq["slots_per_hour"] else float("nan")
    print(f"\nmodel {args.model}, {len(reviews)} CAD dev reviews, one candidate each (default generation)")
    print(f"{'mode':<13} {'slots':>5} {'seconds':>8} {'requests':>8} {'made':>5} {'failed':>6} "
          f"{'examples/h':>10} {'pass share':>10}  runs on")
    for r, (_, n_slots, _, _) in zip(rows, modes):
        print(f"{r['mode']:<13} {n_slots:>5} {r['seconds']:>8.1f} {r['requests_sent']:>8} {r['made']:>5} "
              f"{r['failed']:>6} {r['examples_per_hour']:>10.1f} {r['pass_share']:>10.3f}  {r['runs_on']}"
              + (f" · loaded again on {r['thread_switches']} threads during the run" if r["thread_switches"] else ""))
    for r in rows:
        print(f"{r['mode']} requests by prompt: " + ", ".join(f"{k} {v}" for k, v in r["requests_by_prompt"].items()))
    for r in rows:  # where the time went, from llama.cpp's own timings of each request
        print(f"{r['mode']}: {r['llm_time'] or 'the runtime gave no timings'}")
        for name, t in r["time_by_prompt"].items():
            read = t["prompt_tokens"] - t["cached_tokens"]
            print(f"  {name:<22} {t['requests']:>4} requests  reading {t['prompt_s']:>6.1f} s ({read / t['requests']:.0f} "
                  f"new + {t['cached_tokens'] / t['requests']:.0f} cached tokens each)  writing {t['decode_s']:>6.1f} s "
                  f"({t['completion_tokens'] / t['requests']:.1f} tokens each)")
    print(f"{rows[1]['mode']} / {rows[0]['mode']}: {ratio:.2f}x examples per hour ({slot_ratio:.2f}x slots processed "
          "per hour); goal >= 3x")
    print(json.dumps({"rows": rows, "ratio": round(ratio, 3), "slot_ratio": round(slot_ratio, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
