"""Where the bundled model runs and how wide: the devices llama.cpp reports, free memory, CPU threads and the
number of parallel slots (one per two CPU cores, 1 to 4; 8 on a GPU; fewer when memory is short)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.llm.cpu_threads import cpu_cores
from engine.llm.errors import RuntimeMissingError


#: Context length of one slot (tokens).
DEFAULT_N_CTX = 4096
#: Most slots chosen by default on a CPU / on a GPU.
MAX_CPU_SLOTS = 4
MAX_GPU_SLOTS = 8
#: KV-cache bytes per token of context assumed when sizing slots to memory (generous for
#: the bundled <= 1.5B models: Qwen2.5-1.5B needs 28 KiB per token in f16).
KV_BYTES_PER_TOKEN = 64 * 1024
#: Share of free memory the slots' KV cache may take by default.
KV_MEMORY_SHARE = 0.25
#: Fewest requests of a batch each busy slot should get. A slot computes the batch's shared
#: prompt prefix once before it can reuse it, so spreading a few requests over many slots
#: costs more prefix computation than batched decoding saves (measured with Qwen2.5-1.5B on
#: 2 cores: 4 requests on 4 slots took 2.2x as long as on one slot; 4 primed slots decode
#: about 2x the tokens per second of one).
MIN_REQUESTS_PER_SLOT = 4
#: How often a waiting batch checks its cancel token (seconds).
POLL_S = 0.05
#: ``ggml_backend_dev_type`` names that count as an accelerator.
_GPU_TYPES = ("GPU", "IGPU", "ACCEL")


def default_threads() -> int:
    """CPU threads that are safe while other programs are busy: every core but one, 1 to 8.

    llama.cpp's speed collapses (10-30x slower, measured on 2 cores) when its threads
    outnumber the free cores. The backend uses it while the machine is busy (or as the count
    of a server started on its own); :func:`full_threads` while it is free.
    """
    return max(1, min(cpu_cores() - 1, 8))


def full_threads() -> int:
    """CPU threads while the machine is free: every core this process may use, 1 to 8."""
    return max(1, min(cpu_cores(), 8))


def import_xllamacpp() -> Any:
    """The ``xllamacpp`` module, or a :class:`RuntimeMissingError` saying how to install it."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise RuntimeMissingError(
            "The local LLM runtime 'xllamacpp' is not installed.",
            "Install it with: pip install xllamacpp==2026.10.11549",
        ) from exc
    return xllamacpp


# ---------------------------------------------------------------------------- devices


@dataclass(frozen=True)
class Device:
    """A compute device the runtime reports.

    Parameters
    ----------
    kind
        ``"gpu"`` (a GPU, integrated GPU or other accelerator) or ``"cpu"``.
    name, description
        As the runtime names it (``"CUDA0"``, ``"NVIDIA GeForce RTX 4090"``; ``"CPU"``, ``"AMD EPYC"``).
    memory_free, memory_total
        Bytes (0 when unknown).
    """

    kind: str
    name: str
    description: str = ""
    memory_free: int = 0
    memory_total: int = 0

    @property
    def label(self) -> str:
        """``"GPU CUDA0 (NVIDIA RTX 4090, 22.1 GiB free)"`` / ``"CPU (AMD EPYC)"``."""
        bits = [b for b in (self.description if self.description != self.name else "",
                            f"{self.memory_free / 2**30:.1f} GiB free" if self.kind == "gpu" and self.memory_free
                            else "") if b]
        head = "CPU" if self.kind == "cpu" else f"GPU {self.name}"
        return f"{head} ({', '.join(bits)})" if bits else head


def parse_devices(info: Sequence[Mapping[str, Any]]) -> list[Device]:
    """:class:`Device` values from ``xllamacpp.get_device_info()`` entries.

    The ``type`` of an entry is a ``ggml_backend_dev_type`` (or its name / value): ``GPU``,
    ``IGPU`` and ``ACCEL`` count as ``"gpu"``, anything else as ``"cpu"``.

    Examples
    --------
    >>> parse_devices([{"name": "CPU", "description": "AMD EPYC", "type": 0}])[0].kind
    'cpu'
    >>> parse_devices([{"name": "CUDA0", "description": "RTX", "type": "GGML_BACKEND_DEVICE_TYPE_GPU",
    ...                 "memory_free": 8 << 30}])[0].label
    'GPU CUDA0 (RTX, 8.0 GiB free)'
    """
    out = []
    for entry in info:
        kind_raw = entry.get("type")
        name = getattr(kind_raw, "name", None) or str(kind_raw)
        if isinstance(kind_raw, int) and not hasattr(kind_raw, "name"):
            name = {1: "GPU", 2: "IGPU", 3: "ACCEL"}.get(int(kind_raw), "CPU")
        kind = "gpu" if name.rsplit("_", 1)[-1].upper() in _GPU_TYPES else "cpu"
        out.append(Device(kind, str(entry.get("name") or kind.upper()), str(entry.get("description") or ""),
                          int(entry.get("memory_free") or 0), int(entry.get("memory_total") or 0)))
    return out


def runtime_devices() -> list[Device]:
    """The devices the installed ``xllamacpp`` can run on (a CPU-only build reports just the CPU).

    Raises
    ------
    RuntimeMissingError
    """
    xllamacpp = import_xllamacpp()
    try:
        info = xllamacpp.get_device_info()
    except Exception:  # an old runtime without device info: CPU only
        return [Device("cpu", "CPU")]
    return parse_devices(info) or [Device("cpu", "CPU")]


def gpu_of(devices: Sequence[Device]) -> Device | None:
    """The first GPU among ``devices`` (``None``: CPU only)."""
    return next((d for d in devices if d.kind == "gpu"), None)


def free_memory_bytes() -> int:
    """Available system memory in bytes (0 when unknown)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return 0


def default_slots(*, cpu_count: int | None = None, gpu: Device | None = None, memory_free: int | None = None,
                  n_ctx: int = DEFAULT_N_CTX) -> int:
    """Parallel slots to run: one per two CPU cores (1 to 4), 8 on a GPU, fewer if memory is short.

    Each slot holds ``n_ctx`` tokens of KV cache; the slots together may take at most
    :data:`KV_MEMORY_SHARE` of the free memory (the GPU's when there is one), counting
    :data:`KV_BYTES_PER_TOKEN` per token.

    Examples
    --------
    >>> default_slots(cpu_count=2, memory_free=16 << 30)
    1
    >>> default_slots(cpu_count=8, memory_free=16 << 30)
    4
    >>> default_slots(cpu_count=8, memory_free=1 << 30)
    1
    >>> default_slots(cpu_count=2, gpu=Device("gpu", "CUDA0", memory_free=24 << 30), memory_free=8 << 30)
    8
    """
    cores = cpu_count if cpu_count is not None else (os.cpu_count() or 2)
    wanted = MAX_GPU_SLOTS if gpu is not None else max(1, min(cores // 2, MAX_CPU_SLOTS))
    memory = (gpu.memory_free if gpu is not None and gpu.memory_free else
              (memory_free if memory_free is not None else free_memory_bytes()))
    if memory > 0:
        fits = int(memory * KV_MEMORY_SHARE // (max(n_ctx, 1) * KV_BYTES_PER_TOKEN))
        wanted = min(wanted, max(fits, 1))
    return max(1, wanted)
