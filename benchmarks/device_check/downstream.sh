#!/bin/bash
# On the device (carry .gpu): the CAD downstream rows of generated candidates with a fine-tuned MiniLM-L6 (fast-cpu
# preset, full fine-tuning), for each folder .gpu/gen*/ holding generated.csv and human_same.csv (written here by
# benchmarks/cad_generated.py). D_ori is trained once and reused by the later folders (one project).
set -u
source .gpu/setup.sh
for dir in .gpu/gen*/; do
  echo "=== $dir"
  timeout ${EVAL_S:-400} $PY benchmarks/cad_generated.py --from-csv "$dir" --project /tmp/downstream.cbproj \
    --classifier backbone:minilm-l6 --seeds ${SEEDS:-3} 2>>"$OUT/downstream.err" | tee -a "$OUT/downstream.log"
done
