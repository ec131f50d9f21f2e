"""Batched Integrated Gradients vs a per-example captum loop, on SST-2 dev sentences.

Both explain the same MiniLM-L6 classifier (``minilm-l6`` backbone, new seeded head: timing
does not need a trained head) with IG, 50 steps, the same ``[PAD]`` baseline and word
aggregation (the engine's delta-driven refinement is switched off so both do exactly 50 steps):

* **batched, padded** — :func:`engine.attribution.attribute_texts` with ``max_padding=1``:
  sentences sorted by length and padded in batches of ``--batch-size``, one
  ``LayerIntegratedGradients.attribute()`` call per batch (the accelerator default mixes
  lengths up to 50 % padding);
* **batched, CPU default** — the same with the CPU default ``max_padding=0``: only sentences
  of equal token length share a batch, so no padding is computed;
* **per-example** — a plain loop: tokenize one sentence, one ``attribute()`` call for it
  (its 50 interpolation steps in one pass), map token scores to words.

Prints the times, the speed-ups and the largest absolute difference between the batched and
per-example per-word scores (they must agree).

Usage: ``python benchmarks/attribution.py [--n 200] [--batch-size 32] [--steps 50]``
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SST2_DEV = REPO.parent / "shared" / "data" / "sst2_glue" / "dev.tsv"


def read_sst2(path: Path, n: int) -> list[str]:
    """The first ``n`` sentences of GLUE SST-2 dev (no quoting: the file is not CSV-quoted)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["content"] for r in rows[:n]]


def per_example_loop(model, tokenizer, sentences: list[str], steps: int, max_length: int) -> list:
    """The straightforward captum loop, one ``attribute()`` call per sentence."""
    import numpy as np
    import torch
    from captum.attr import LayerIntegratedGradients

    from engine.attribution.batch import encode_batch
    from engine.attribution.forward import ClassifierForward
    from engine.text import token_to_word_scores

    forward = ClassifierForward(model)
    lig = LayerIntegratedGradients(forward, model.get_input_embeddings())
    out = []
    for text in sentences:
        batch = encode_batch(model, tokenizer, [(text,)], max_length)
        with torch.no_grad():
            target = forward(batch.input_ids, *batch.forward_args()).argmax(dim=-1)
        attributions = lig.attribute(
            inputs=batch.input_ids,
            baselines=batch.baseline_ids,
            target=target,
            additional_forward_args=batch.forward_args(),
            n_steps=steps,
            internal_batch_size=steps,
        )
        tokens = attributions.sum(dim=-1)[0].detach().numpy()
        al = batch.alignments[0][0]
        out.append(np.nan_to_num(token_to_word_scores(al, tokens)[: al.n_covered_prefix]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="SST-2 dev sentences (default 200)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per batched attribute() call")
    parser.add_argument("--steps", type=int, default=50, help="IG steps (default 50)")
    parser.add_argument("--max-length", type=int, default=128)
    args = parser.parse_args()

    import numpy as np
    import torch

    from engine.attribution import ExampleInput, IGSettings, attribute_texts
    from engine.models import get_backbone

    sentences = read_sst2(SST2_DEV, args.n)
    backbone = get_backbone("minilm-l6")
    tokenizer = backbone.load_tokenizer()
    model = backbone.build_model(2, {0: "negative", 1: "positive"}, seed=0).eval()
    model.requires_grad_(False)
    n_tokens = [len(tokenizer(s)["input_ids"]) for s in sentences]
    print(
        f"IG, {args.steps} steps, MiniLM-L6 (untrained head), {len(sentences)} SST-2 dev sentences "
        f"({np.mean(n_tokens):.1f} tokens on average, max {max(n_tokens)}); torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )

    # warm-up (lazy imports, allocator) on a few sentences, not timed
    attribute_texts(model, tokenizer, ["negative", "positive"], ("text",), [ExampleInput(0, (sentences[0],))], "ig", IGSettings(n_steps=4))

    examples = [ExampleInput(i, (s,)) for i, s in enumerate(sentences)]
    labels = ["negative", "positive"]
    runs = {}
    for name, padding in (("batched, padded", 1.0), ("batched, CPU default", 0.0)):
        t0 = time.perf_counter()
        out = attribute_texts(
            model, tokenizer, labels, ("text",), examples, "ig", IGSettings(n_steps=args.steps, delta_tolerance=None),
            max_length=args.max_length, batch_size=args.batch_size, max_padding=padding,
        )
        runs[name] = (time.perf_counter() - t0, out)

    t0 = time.perf_counter()
    single = per_example_loop(model, tokenizer, sentences, args.steps, args.max_length)
    t_single = time.perf_counter() - t0

    words = sum(len(s) for s in single)
    for name, (seconds, out) in runs.items():
        diff = max(float(np.max(np.abs(b.fields[0].scores - s))) if len(s) else 0.0 for b, s in zip(out, single))
        deltas = np.abs([b.delta for b in out])
        print(
            f"{name:<22} {seconds:7.1f} s ({len(sentences) / seconds:5.2f} sentences/s)  speed-up vs per-example "
            f"{t_single / seconds:.2f}x  max |diff| over {words} word scores {diff:.1e}  max |IG delta| {deltas.max():.1e}"
        )
    print(f"{'per-example loop':<22} {t_single:7.1f} s ({len(sentences) / t_single:5.2f} sentences/s)")


if __name__ == "__main__":
    main()
