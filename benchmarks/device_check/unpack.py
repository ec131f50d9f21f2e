"""On the device: restore the carried fp16 MiniLM-L6 weights to an fp32 model folder (argv[1])."""
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

src, dst = Path(".gpu/model"), Path(sys.argv[1])
shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("model.fp16.safetensors"))
weights = load_file(str(src / "model.fp16.safetensors"))
save_file({k: v.float().contiguous() for k, v in weights.items()}, str(dst / "model.safetensors"), metadata={"format": "pt"})
print("model restored:", dst, len(weights), "tensors")
