"""Device choice and mixed precision (autocast only on a GPU)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEVICE_NAMES",
    "Precision",
    "autocast",
    "check_device_name",
    "default_preset",
    "has_gpu",
    "release_memory",
    "resolve_device",
    "resolve_precision",
]

#: The device names :func:`resolve_device` accepts (``cuda:N`` for the N-th GPU).
DEVICE_NAMES = ("auto", "cpu", "cuda", "cuda:N", "mps")
_DEVICE = re.compile(r"(auto|cpu|mps|cuda(:\d+)?)")

#: Preset used when no GPU is found: each member trains on a sample of the train rows — the MiniLMs
#: fully fine-tuned on 800 (their word importance is far more like human edits than with frozen
#: lower layers), MPNet its top layer on up to 3,000 (see :data:`engine.models.config.SIZED_PRESETS`) —
#: so the minutes do not grow with the dataset.
CPU_PRESET = "sample-cpu"
GPU_PRESET = "fast-cpu"


def check_device_name(name: str) -> str:
    """``name`` stripped and lower-cased when it is one of :data:`DEVICE_NAMES` (no torch import).

    Raises
    ------
    engine.models.errors.UnknownDeviceError
        Any other name (CB512).
    """
    from engine.models.errors import UnknownDeviceError

    clean = str(name).strip().lower()
    if not _DEVICE.fullmatch(clean):
        raise UnknownDeviceError(
            f"Unknown device {name!r}.",
            "Use one of: auto (a GPU when there is one, else the CPU), cpu, cuda, cuda:N (the N-th GPU, from 0), mps.",
        )
    return clean


def resolve_device(name: str = "auto") -> Any:
    """``torch.device`` for ``name``; ``"auto"`` picks cuda, then mps, then cpu.

    Raises
    ------
    engine.models.errors.UnknownDeviceError
        ``name`` is not a device name (CB512).
    engine.models.errors.DeviceUnavailableError
        The device is not present on this machine (CB513).
    """
    import torch

    from engine.models.errors import DeviceUnavailableError

    name = check_device_name(name)
    if name != "auto":
        kind, _, index = name.partition(":")
        if kind == "cuda":
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if count == 0 or (index and int(index) >= count):
                raise DeviceUnavailableError(
                    f"Device {name!r} is not available here ({count} CUDA GPU{'s' if count != 1 else ''} found).",
                    "Use --device cpu or auto" + (f", or cuda:0 to cuda:{count - 1}." if count else "."),
                )
        if kind == "mps":
            mps = getattr(torch.backends, "mps", None)
            if mps is None or not mps.is_available():
                raise DeviceUnavailableError("Device 'mps' is not available here (no Apple GPU).",
                                             "Use --device cpu or auto.")
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def has_gpu(*, import_torch: bool = True) -> bool:
    """Whether a CUDA or MPS device is usable.

    Parameters
    ----------
    import_torch
        Ask torch (imported if needed; ``False`` when it is not installed). With ``False`` and
        torch not imported yet, guess cheaply instead (an NVIDIA driver, or Apple silicon), so a
        GUI can pick a default without a seconds-long import.
    """
    import sys

    if import_torch or "torch" in sys.modules:
        try:
            return resolve_device("auto").type != "cpu"
        except ImportError:
            return False
    import os
    import platform
    import shutil

    if sys.platform == "darwin":
        return platform.machine() == "arm64"
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None


def default_preset(*, import_torch: bool = True) -> str:
    """The training preset to offer by default: ``sample-cpu`` on a CPU-only machine (full
    fine-tuning of the default ensemble takes about an hour on 2 cores), ``fast-cpu`` with a GPU.
    ``import_torch``: see :func:`has_gpu`."""
    return GPU_PRESET if has_gpu(import_torch=import_torch) else CPU_PRESET


@dataclass(frozen=True)
class Precision:
    """Resolved mixed-precision mode: ``dtype`` is ``None`` when autocast is off."""

    dtype: Any = None
    use_scaler: bool = False

    @property
    def label(self) -> str:
        return "fp32" if self.dtype is None else str(self.dtype).removeprefix("torch.")


def resolve_precision(device: Any, mode: str = "auto") -> Precision:
    """Autocast dtype for ``device``: bf16 (CUDA, if supported) or fp16; never on CPU.

    fp16 on CUDA uses a gradient scaler; bf16 does not need one.
    """
    import torch

    if device.type == "cpu" or mode == "no":
        return Precision()
    if device.type == "cuda":
        if mode == "bf16" or (mode == "auto" and torch.cuda.is_bf16_supported()):
            return Precision(torch.bfloat16)
        return Precision(torch.float16, use_scaler=True)
    if device.type == "mps":
        return Precision(torch.bfloat16 if mode == "bf16" else torch.float16)
    return Precision()


def autocast(device: Any, precision: Precision) -> contextlib.AbstractContextManager:
    """``torch.autocast`` for a GPU precision, else a no-op context."""
    import torch

    if precision.dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=precision.dtype)


def release_memory() -> None:
    """Give memory of models no longer referenced back: collect cycles, empty the CUDA cache, and
    on glibc return freed heap pages to the system (``malloc_trim``), so that the process does not
    keep gigabytes resident after a training or attribution job ends or is cancelled."""
    import ctypes
    import ctypes.util
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
    if sys.platform.startswith("linux"):
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name) if name else None
            if libc is not None and hasattr(libc, "malloc_trim"):
                libc.malloc_trim(0)
        except OSError:
            pass
