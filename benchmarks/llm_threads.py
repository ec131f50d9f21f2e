"""CPU threads of the bundled model: the old fixed count (every core but one) vs the load-following default, in one run.

Real edit requests of the counterbias step (prompt ``edit_sentence``, filled with a sentence of
a CAD dev review and its neighbours, ``../shared/data/cad/sentiment/orig/dev.tsv``; see its
SOURCE.md) go through :meth:`engine.llm.local_backend.LocalBackend.chat_many` with the bundled
model at temperature 0, one slot, in two scenarios:

* **free**: nothing else runs;
* **busy spell**: another program (a busy loop on one core) starts after the first third of the
  requests and stops after the second third — a browser tab, a second model.

Each scenario runs twice on the same requests: with ``n_threads`` fixed to every core but one
(the default before the governor) and with the default (no ``n_threads``: every core while the
machine is free, one fewer while it is busy). The model is loaded and the prompt's few-shot
prefix computed before the clock starts. It prints seconds per request, the speed-up, and the
thread switches the default made (with the progress message the user sees).

    python benchmarks/llm_threads.py [--requests 12] [--model qwen2.5-coder-1.5b]

On a 2-core machine the interesting case is 1 vs 2 threads; on a machine with many cores the
difference is small (7 vs 8 threads).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAD_DEV = ROOT.parent / "shared" / "data" / "cad" / "sentiment" / "orig" / "dev.tsv"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run the checkout's engine, not an installed one

POSITIVE = {"great", "good", "best", "wonderful", "excellent", "love", "loved", "enjoyed", "fun", "beautiful",
            "funny", "brilliant", "amazing", "perfect"}
NEGATIVE = {"bad", "worst", "boring", "awful", "terrible", "waste", "poor", "stupid", "dull", "horrible", "worse",
            "disappointing", "annoying"}


def edit_requests(path: Path, n: int, offset: int = 40) -> list:
    """``n + 1`` edit requests built from CAD dev reviews (by length, from ``offset``): the sentence with the
    most opinion words of its label goes to the prompt with its neighbours, as the counterbias step sends it."""
    from engine.llm.base import ChatRequest
    from engine.llm.prompts import load_prompt
    from engine.text.sentences import split_sentences

    with open(path, newline="", encoding="utf-8") as f:
        rows = [(label, text) for label, text in list(csv.reader(f, delimiter="\t"))[1:]]
    rows = sorted(rows, key=lambda r: (len(r[1]), r[1]))[offset:offset + n + 1]
    prompt = load_prompt("edit_sentence")
    requests = []
    for label, text in rows:
        sentences = split_sentences(text)
        lexicon = POSITIVE if label == "Positive" else NEGATIVE

        def opinion(sentence: str) -> list[str]:
            return sorted({w.lower() for w in re.findall(r"[A-Za-z']+", sentence)} & lexicon)

        i = max(range(len(sentences)), key=lambda k: len(opinion(sentences[k])))
        requests.append(ChatRequest(prompt.render(
            task="sentiment of a movie review", labels="Negative, Positive",
            before=sentences[i - 1] if i else "", sentence=sentences[i],
            after=sentences[i + 1] if i + 1 < len(sentences) else "", label=label,
            target="Negative" if label == "Positive" else "Positive",
            change=", ".join(opinion(sentences[i])) or "(not named)", keep="(none)")))
    return requests


class BusySpell:
    """A busy loop on one core between two request counts (started/stopped from ``on_result``)."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop
        self.process: subprocess.Popen | None = None

    def __call__(self, index: int, outcome: object) -> None:
        del outcome
        done = index + 1
        if done == self.start and self.process is None:
            self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        elif done == self.stop:
            self.end()

    def end(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def run(model: str, requests: list, threads: int | None, spell: BusySpell | None) -> dict:
    """Seconds per request for one backend setting (model loaded and prefix primed first)."""
    from engine.llm.base import ChatResult
    from engine.llm.config import LLMConfig
    from engine.llm.local_backend import LocalBackend

    options = {"n_parallel": 1, **({"n_threads": threads} if threads else {})}
    backend = LocalBackend(LLMConfig(backend="local", model=model, params={"temperature": 0.0, "max_tokens": 120},
                                     options=options))
    backend.load()
    backend.chat_many(requests[:1])  # the few-shot prefix, as any earlier request of the step would have left it
    loaded_with = backend.threads_now
    switches: list[str] = []

    def progress(fraction: float, message: str) -> None:
        del fraction
        if "now runs on" in message:
            switches.append(message.split(" · ", 1)[1])

    t0 = time.perf_counter()
    try:
        out = backend.chat_many(requests[1:], progress=progress, on_result=spell)
    finally:
        if spell is not None:
            spell.end()
    seconds = time.perf_counter() - t0
    backend.close()
    return {"s": seconds, "per": seconds / len(out), "ok": sum(isinstance(o, ChatResult) for o in out),
            "threads": loaded_with, "end": backend.threads_now, "switches": switches}


def main(argv: list[str] | None = None) -> int:
    from engine.llm.cpu_threads import cpu_cores
    from engine.llm.local_backend import default_threads, full_threads

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=12, help="timed requests per scenario (default 12)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--data", type=Path, default=CAD_DEV)
    args = parser.parse_args(argv)
    if full_threads() <= default_threads():
        print("one core: the default does not change the thread count; nothing to compare")
        return 0
    n = max(3, args.requests)
    requests = edit_requests(args.data, n)
    print(f"{args.model}, {cpu_cores()} cores, {n} edit requests per scenario; old default "
          f"{default_threads()} thread(s), new default {full_threads()} free / {default_threads()} busy\n")
    print(f"{'scenario':<12} {'setting':<20} {'s/request':>10} {'ok':>4}  threads (start -> end), switches")
    rows = {}
    for scenario in ("free", "busy spell"):
        for name, threads in (("old: fixed", default_threads()), ("new: follows load", None)):
            spell = BusySpell(n // 3, 2 * n // 3) if scenario == "busy spell" else None
            r = run(args.model, requests, threads, spell)
            rows[scenario, name] = r
            print(f"{scenario:<12} {name:<20} {r['per']:>10.2f} {r['ok']:>4}  {r['threads']} -> {r['end']}"
                  + (f"; {' | '.join(r['switches'])}" if r["switches"] else ""), flush=True)
    print()
    for scenario in ("free", "busy spell"):
        old, new = rows[scenario, "old: fixed"], rows[scenario, "new: follows load"]
        print(f"{scenario}: {old['per']:.2f} -> {new['per']:.2f} s/request = {old['per'] / new['per']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
