#!/bin/bash
# On the device (carry .gpu): engine tests on CUDA, the demo path, explain_cost. DRY=1: a tiny run on any machine.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
PY=${PY:-python3}; SITE=/tmp/site_cb; mkdir -p $SITE
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONPATH=$SITE:$PWD/.gpu/shim:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
export GPU_MINILM=/tmp/minilm COUNTERBIAS_MODELS_CACHE=/tmp/mcache COUNTERBIAS_HOME=/tmp/cbhome
$PY .gpu/unpack.py $GPU_MINILM
[ -d ../shared/data/cad ] || { mkdir -p ../shared && cp -r .gpu/shared/data ../shared/; }
$PY -c "import torch, engine.models.device as d; print('torch', torch.__version__, 'device', d.resolve_device(), 'precision', d.resolve_precision(d.resolve_device()).label)"
if [ "${DRY:-0}" = 1 ]; then ROWS="--rows 120"; REV=3; TR="--max-train-rows 120 --epochs 1"; TESTS="tests/engine/models/test_registry.py"
else ROWS=""; REV=50; TR=""; TESTS="tests/engine/models tests/engine/attribution tests/engine/evaluation/test_experiment.py"; fi
timeout ${TEST_S:-150} $PY -m pytest -q -p no:cacheprovider --timeout 120 -o addopts= $TESTS 2>&1 | tee "$OUT/pytest.log" | tail -20
timeout ${PRESETS_S:-120} $PY benchmarks/device_check/presets.py 2>&1 | grep -vi warn | tee "$OUT/presets.log" | tail -22
timeout ${DEMO_S:-120} $PY benchmarks/demo_path.py --members minilm-l6 --threads 8 $ROWS --workdir /tmp/dp 2>"$OUT/demo.err" | tee "$OUT/demo.log"
timeout ${EXPLAIN_S:-120} $PY benchmarks/explain_cost.py --members minilm-l6 --reviews $REV $TR --workdir /tmp/ec 2>&1 | tee "$OUT/explain.log" | tail -20
