"""Device smoke check: every training preset and IG on the machine's accelerator, with tiny random encoders.

Trains a tiny RoBERTa / ELECTRA / MPNet / DistilBERT member (random weights: only the MiniLM
tokenizer files are needed) with each preset on CAD sentiment, prints the device each ran on and,
for the cached presets, the largest logit difference between the cached path and the full model;
then explains a few sentences with IG on the device and checks completeness. Ends with
``ALL OK`` or ``SOME FAILED``. Accuracy is meaningless here (random tiny encoders, one epoch).

    python benchmarks/device_check/presets.py [--data ../shared/data/cad/sentiment/orig]

Seen on an NVIDIA H200 (2026-11-26, torch 2.11+cu130): all 16 members on cuda, cached-path
differences <= 6e-8, IG completeness |delta| <= 5e-8, 34 s in all.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch

from engine.io.importer import ImportOptions, import_file
from engine.models import MemberSpec, train_member, train_preset
from engine.models.device import resolve_device
from engine.store import Project

print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
print("engine picks", resolve_device("auto"))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared/data/cad/sentiment/orig",
                    help="folder holding CAD's train.tsv and dev.tsv")
args = parser.parse_args()
tmp = Path(tempfile.mkdtemp())
project = Project.create(tmp / "cad.cbproj")
ds = import_file(project, args.data / "train.tsv", options=ImportOptions(name="cad")).dataset
import_file(project, args.data / "dev.tsv", options=ImportOptions(append_to=ds.id, split="dev"))
ok = True
common = {"max_length": 64, "max_train_rows": 512, "max_dev_rows": 128, "epochs": 1}
for preset in ("top-cpu", "quick-cpu", "fast-cpu", "paper"):
    for arch in ("roberta", "electra", "mpnet", "distilbert"):
        try:
            spec = MemberSpec(f"{preset}-{arch}", f"tiny-{arch}", {}, train_preset(preset, **common))
        except Exception as exc:  # a preset name unknown here
            print(preset, "not a preset:", exc)
            break
        t = time.perf_counter()
        try:
            m = train_member(project, ds.id, spec).model.metrics
            print(f"{preset:9} {arch:10} device {m.get('device')} dev {m.get('dev_accuracy', float('nan')):.3f} "
                  f"verified {m.get('verified_rows')} diff {m.get('verified_max_logit_diff')} {time.perf_counter() - t:.1f}s")
        except Exception as exc:
            ok = False
            print(f"{preset:9} {arch:10} FAILED {type(exc).__name__}: {exc}")

from engine.attribution import IGSettings, attribute_texts
from engine.models.loading import load_member
from tests.engine.attribution.test_ig import _check_completeness, _examples

for name in ("top-cpu-roberta", "fast-cpu-distilbert"):
    try:
        m = load_member(project, name)
        print(name, "loaded on", next(m.model.parameters()).device)
        results = attribute_texts(m.model, m.tokenizer, m.info.labels, m.info.fields, _examples(), "ig", IGSettings(), max_length=64)
        _check_completeness(m.model, m.tokenizer, m.info.labels, results, 64, tol=0.02)
        print(name, "IG on", next(m.model.parameters()).device, "completeness ok; max |delta|", max(abs(r.delta) for r in results))
    except Exception as exc:
        ok = False
        print(name, "IG FAILED", type(exc).__name__, exc)
print("ALL OK" if ok else "SOME FAILED")
