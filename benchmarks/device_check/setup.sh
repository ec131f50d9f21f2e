# Sourced by the device scripts (run.sh, downstream.sh): install the carried wheels, restore MiniLM-L6, put the
# carried data where the benchmarks look for it (../shared/data).
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
PY=${PY:-python3}; SITE=/tmp/site_cb; mkdir -p $SITE
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONPATH=$SITE:$PWD/.gpu/shim:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
export GPU_MINILM=/tmp/minilm COUNTERBIAS_MODELS_CACHE=/tmp/mcache COUNTERBIAS_HOME=/tmp/cbhome
[ -f $GPU_MINILM/model.safetensors ] || $PY .gpu/unpack.py $GPU_MINILM
[ -d ../shared/data/cad ] || { mkdir -p ../shared && cp -r .gpu/shared/data ../shared/; }
$PY -c "import torch, engine.models.device as d; print('torch', torch.__version__, 'device', d.resolve_device(), 'precision', d.resolve_precision(d.resolve_device()).label)"
