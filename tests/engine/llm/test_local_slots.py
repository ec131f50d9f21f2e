"""The local backend's parallel slots, its device detection and its bounded concurrent batches."""

from __future__ import annotations

import threading

import pytest

from engine.errors import Cancelled
from engine.llm.base import ChatRequest, ChatResult
from engine.llm.config import LLMConfig
from engine.llm.local_backend import LocalBackend, ServerSettings, build_params
from engine.llm.local_devices import (
    MIN_REQUESTS_PER_SLOT,
    Device,
    default_slots,
    gpu_of,
    import_xllamacpp,
    parse_devices,
    runtime_devices,
)
from engine.progress import CancelToken
from tests.engine.llm.conftest import SMOL, require_smollm2

SLOTS = 2


class CountingServer:
    """Wraps the real ``xllamacpp.Server``: counts calls and the most in flight at once."""

    def __init__(self, server) -> None:
        self.server = server
        self.calls = 0
        self.active = 0
        self.most = 0
        self._lock = threading.Lock()

    def handle_chat_completions(self, body):
        with self._lock:
            self.calls += 1
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            return self.server.handle_chat_completions(body)
        finally:
            with self._lock:
                self.active -= 1


@pytest.fixture(scope="module")
def slotted(tmp_path_factory):
    """SmolLM2 in-process with two slots, loaded once for this module."""
    require_smollm2()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COUNTERBIAS_HOME", str(tmp_path_factory.mktemp("slots-home")))
        backend = LocalBackend(LLMConfig(backend="local", model=SMOL, params={"max_tokens": 6, "seed": 0},
                                         options={"n_threads": 1, "n_ctx": 512, "n_parallel": SLOTS}))
        backend.load()
    real = backend._server
    yield backend, real
    backend.close()


@pytest.fixture
def counted(slotted):
    backend, real = slotted
    counter = CountingServer(real)
    backend._server = counter
    yield backend, counter
    backend._server = real


def requests(n: int) -> list[ChatRequest]:
    """``n`` requests whose prompts grow by one word each, so their prompt token counts tell them apart."""
    return [ChatRequest([{"role": "user", "content": "Say hi" + " please" * i}]) for i in range(n)]


# ---------------------------------------------------------------------------- settings


def test_slot_settings_reach_the_server_params():
    xllamacpp = import_xllamacpp()
    p = build_params(xllamacpp, "/models/m.gguf", ServerSettings(n_ctx=2048, n_parallel=4, n_threads=3, n_gpu_layers=-1),
                     alias="m")
    assert p.model.path == "/models/m.gguf"
    assert p.n_parallel == 4 and p.n_ctx == 4 * 2048  # llama.cpp splits n_ctx among the slots
    assert p.cont_batching and p.cache_prompt and not p.kv_unified
    assert p.n_gpu_layers == -1
    assert p.cpuparams.n_threads == 3 and p.cpuparams_batch.n_threads == 3
    assert p.cpuparams.poll == 0 and p.cpuparams_batch.poll == 0


def test_options_override_the_machine_defaults():
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL,
                                     options={"n_parallel": 3, "n_threads": 2, "n_ctx": 1024, "n_gpu_layers": 0}))
    assert backend.settings == ServerSettings(n_ctx=1024, n_parallel=3, n_threads=2, n_gpu_layers=0)
    assert backend.n_parallel == 3 and backend.gpu is None
    assert backend.describe().endswith("2 threads · 3 parallel slots of 1024 tokens")


def test_defaults_follow_cores_memory_and_gpu():
    assert default_slots(cpu_count=2, memory_free=16 << 30) == 1
    assert default_slots(cpu_count=4, memory_free=16 << 30) == 2
    assert default_slots(cpu_count=64, memory_free=64 << 30) == 4
    assert default_slots(cpu_count=8, memory_free=512 << 20) == 1  # the KV cache would not fit
    gpu = Device("gpu", "CUDA0", "RTX", memory_free=24 << 30)
    assert default_slots(cpu_count=2, gpu=gpu) == 8
    assert default_slots(cpu_count=2, gpu=Device("gpu", "CUDA0", memory_free=2 << 30)) == 2


def test_the_runtime_reports_the_device_it_runs_on():
    """This runtime's own report decides: the CPU path is real here; a GPU build would name its GPU."""
    devices = runtime_devices()
    assert devices and any(d.kind == "cpu" for d in devices)
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL))
    gpu = gpu_of(devices)
    if gpu is None:
        assert backend.gpu is None and backend.settings.n_gpu_layers == 0
        assert backend.describe().startswith("CPU")
    else:
        assert backend.settings.n_gpu_layers == -1 and gpu.name in backend.describe()


def test_gpu_entries_as_the_runtime_reports_them_turn_on_offloading():
    xllamacpp = import_xllamacpp()
    kinds = xllamacpp.ggml_backend_dev_type
    info = [  # the shape of xllamacpp.get_device_info() on a CUDA build
        {"name": "CUDA0", "description": "NVIDIA GeForce RTX 4090", "memory_free": 22 << 30,
         "memory_total": 24 << 30, "type": kinds.GGML_BACKEND_DEVICE_TYPE_GPU},
        {"name": "CPU", "description": "AMD EPYC", "memory_free": 0, "memory_total": 0,
         "type": kinds.GGML_BACKEND_DEVICE_TYPE_CPU},
    ]
    devices = parse_devices(info)
    assert [d.kind for d in devices] == ["gpu", "cpu"]
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL, options={"n_threads": 1}))
    backend._devices = devices
    assert backend.settings.n_gpu_layers == -1 and backend.n_parallel == 8
    assert backend.describe().startswith("GPU CUDA0 (NVIDIA GeForce RTX 4090, 22.0 GiB free)")
    forced = LocalBackend(LLMConfig(backend="local", model=SMOL, options={"n_gpu_layers": 0}))
    forced._devices = devices
    assert forced.gpu is None and forced.settings.n_gpu_layers == 0 and forced.describe().startswith("CPU")


# ---------------------------------------------------------------------------- batches


def test_at_most_n_parallel_requests_are_in_flight(counted):
    backend, counter = counted
    out = backend.chat_many(requests(6))
    assert counter.calls == 6
    assert counter.most == SLOTS  # both slots were busy at once, never more
    assert all(isinstance(r, ChatResult) for r in out)


def test_a_small_batch_uses_one_slot_per_four_requests(counted):
    backend, counter = counted
    backend.chat_many(requests(MIN_REQUESTS_PER_SLOT))
    assert counter.calls == MIN_REQUESTS_PER_SLOT and counter.most == 1  # the prefix is computed in one slot only


def test_results_come_back_in_order_and_each_is_reported_once(counted):
    backend, _ = counted
    seen: list[int] = []
    fractions: list[float] = []
    out = backend.chat_many(requests(5), on_result=lambda i, r: seen.append(i),
                            progress=lambda f, m="": fractions.append(f))
    assert sorted(seen) == list(range(5)) and len(seen) == 5
    prompt_tokens = [r.usage.prompt_tokens for r in out]
    assert prompt_tokens == sorted(prompt_tokens) and len(set(prompt_tokens)) == 5  # request i's answer in place i
    assert fractions == [(k + 1) / 5 for k in range(5)]


def test_cancel_stops_submitting_and_reports_what_was_running(counted):
    backend, counter = counted
    token = CancelToken()
    seen: list[int] = []

    def on_result(index, outcome):
        seen.append(index)
        token.cancel()

    with pytest.raises(Cancelled):
        backend.chat_many(requests(6), cancel=token, on_result=on_result)
    assert counter.calls == SLOTS  # the two running when the cancel came; nothing submitted after
    assert sorted(seen) == list(range(SLOTS))


def test_the_lead_request_goes_out_alone(counted):
    backend, counter = counted
    order: list[int] = []
    backend.chat_many(requests(6), lead_s=60.0, on_result=lambda i, r: order.append(i))
    assert order[0] == 0 and counter.calls == 6 and counter.most == SLOTS  # the first finished before others began
