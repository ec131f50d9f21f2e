#!/bin/bash
# On the device (carry .gpu): engine tests on CUDA, the demo path, explain_cost. DRY=1: a tiny run on any machine.
set -u
source .gpu/setup.sh
if [ "${DRY:-0}" = 1 ]; then ROWS="--rows 120"; REV=3; TR="--max-train-rows 120 --epochs 1"; TESTS="tests/engine/models/test_registry.py"
else ROWS=""; REV=50; TR=""; TESTS="tests/engine/models tests/engine/attribution tests/engine/evaluation/test_experiment.py"; fi
timeout ${TEST_S:-150} $PY -m pytest -q -p no:cacheprovider --timeout 120 -o addopts= $TESTS 2>&1 | tee "$OUT/pytest.log" | tail -20
timeout ${PRESETS_S:-120} $PY benchmarks/device_check/presets.py 2>&1 | grep -vi warn | tee "$OUT/presets.log" | tail -22
timeout ${DEMO_S:-120} $PY benchmarks/demo_path.py --members minilm-l6 --threads 8 $ROWS --workdir /tmp/dp 2>"$OUT/demo.err" | tee "$OUT/demo.log"
timeout ${EXPLAIN_S:-120} $PY benchmarks/explain_cost.py --members minilm-l6 --reviews $REV $TR --workdir /tmp/ec 2>&1 | tee "$OUT/explain.log" | tail -20
