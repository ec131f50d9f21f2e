"""Backend ``local``: the bundled GGUF model, run in-process by ``xllamacpp``.

This is the default backend: it needs no server, no key and no network. Models
(:data:`engine.llm.gguf.MODELS`): ``"qwen2.5-coder-1.5b"`` (default),
``"qwen2.5-coder-0.5b"`` and ``"smollm2-135m"`` (tiny; good only for exercising the
plumbing in tests).

Provenance: the two Qwen2.5-Coder part-package sets come from an **unknown publisher
with no licence field** (upstream Qwen2.5-Coder is Apache-2.0); they are pinned by
version and by the sha256 of the assembled file, see :mod:`engine.llm.gguf`.

The runtime is ``xllamacpp`` (llama.cpp's server as a library), imported lazily. The
model is loaded on the first call and freed by :meth:`LocalBackend.close`.

Throughput
----------
The server runs ``n_parallel`` *slots* with continuous batching: requests in different slots are decoded
together. :meth:`LocalBackend.chat_many` keeps up to ``n_parallel`` requests in flight (a thread pool;
``Server.handle_chat_completions`` releases the GIL). Each slot keeps its last prompt in the KV cache
(``cache_prompt``), so the few-shot prefix a step's requests share is computed once per slot; a slot never
borrows another slot's prefix, hence :data:`~engine.llm.local_devices.MIN_REQUESTS_PER_SLOT` and the slot counts of
:func:`~engine.llm.local_devices.default_slots`. Options ``n_parallel`` and ``n_threads`` override them. Each
answer carries llama.cpp's timings in its :class:`~engine.llm.base.Usage` (``cached_tokens``, ``prompt_ms``,
``decode_ms``). Why, and what was measured and not adopted: ``docs/design/local-llm.md`` and
``benchmarks/RESULTS.md`` (*Local LLM*).

Threads
-------
Without an ``n_threads`` option the CPU threads follow the machine
(:class:`~engine.llm.cpu_threads.ThreadGovernor`): every core while other programs leave the
CPU free (on 2 cores this halves the time per request), one core fewer while they keep a core
busy (llama.cpp's threads wait for each other at every step, so a shared core slows decoding
about ninefold). :meth:`LocalBackend.chat_many` looks at the load after each request (at most every
:data:`~engine.llm.cpu_threads.LOOK_S` seconds): the first look that finds the machine busy takes a
core back; every core comes back once the machine has been free for
:data:`~engine.llm.cpu_threads.CHECK_S` seconds and a wait since it was busy has passed. To
switch, it lets the requests in flight finish and loads the model again with the other thread count
(a few seconds, and the prompt cache starts empty).

GPU
---
If the installed runtime reports a GPU (``xllamacpp.get_device_info()``: CUDA, Metal,
Vulkan...), every layer that fits is offloaded (``n_gpu_layers = -1``: llama.cpp fits them
to free memory); otherwise it runs on the CPU (``n_gpu_layers = 0``). Option
``n_gpu_layers`` overrides it (0 forces the CPU). :meth:`LocalBackend.describe` says which.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.errors import Cancelled
from engine.llm.base import ChatRequest, ChatResult, Failure, Outcome, ResultCallback, Usage, timing_fields
from engine.llm.config import LLMConfig
from engine.llm.cpu_threads import LoadSampler, ThreadGovernor
from engine.llm.errors import (
    BadResponseError,
    LLMError,
    ModelFileError,
    RequestRejectedError,
)
from engine.llm.gguf import get_spec, model_path
from engine.llm.guard import check_prompt
from engine.llm.local_devices import (
    DEFAULT_N_CTX,
    MIN_REQUESTS_PER_SLOT,
    POLL_S,
    Device,
    default_slots,
    default_threads,
    full_threads,
    gpu_of,
    import_xllamacpp,
    runtime_devices,
)
from engine.llm.registry import register_backend
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- server


@dataclass(frozen=True)
class ServerSettings:
    """How the llama.cpp server is set up (what :func:`build_params` puts in ``CommonParams``).

    Parameters
    ----------
    n_ctx
        Context of *one slot*; the server gets ``n_ctx * n_parallel`` (llama.cpp divides its
        context evenly among the slots).
    n_parallel
        Slots: requests decoded together (continuous batching).
    n_threads
        CPU threads for generation and prompt processing.
    n_gpu_layers
        Layers offloaded to the GPU: 0 (CPU only) or -1 (as many as fit).
    """

    n_ctx: int = DEFAULT_N_CTX
    n_parallel: int = 1
    n_threads: int = 1
    n_gpu_layers: int = 0

    @property
    def total_ctx(self) -> int:
        return self.n_ctx * self.n_parallel


def build_params(
    xllamacpp: Any,
    gguf: Path,
    settings: ServerSettings,
    *,
    alias: str | None = None,
    port: int | None = None,
    host: str = "127.0.0.1",
    api_key: str | None = None,
) -> Any:
    """The ``xllamacpp.CommonParams`` that load ``gguf`` with ``settings`` (nothing is loaded here)."""
    p = xllamacpp.CommonParams()
    p.model.path = str(gguf)
    p.n_ctx = int(settings.total_ctx)
    p.n_parallel = int(settings.n_parallel)
    p.cont_batching = True  # slots are decoded together, a new request joins at the next step
    p.kv_unified = False  # each slot owns n_ctx tokens and keeps its last prompt (a unified cache
    #                       clears idle slots whenever a new task starts, losing the shared prefix)
    p.cache_prompt = True  # a request reuses the longest prefix its slot already holds
    p.n_gpu_layers = int(settings.n_gpu_layers)
    p.cpuparams.n_threads = int(settings.n_threads)
    p.cpuparams_batch.n_threads = int(settings.n_threads)
    p.cpuparams.poll = 0  # no busy-waiting: spinning threads collapse throughput when a core is busy
    p.cpuparams_batch.poll = 0
    p.verbosity = -1  # llama.cpp logs nothing but errors
    if alias:
        p.model_alias = {alias}
    if port is not None:
        p.port = int(port)
        p.hostnames = [host]
        if api_key:
            p.api_keys = [api_key]
    return p


def load_server(
    gguf: Path,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    n_parallel: int = 1,
    n_gpu_layers: int = 0,
    alias: str | None = None,
    port: int | None = None,
    host: str = "127.0.0.1",
    api_key: str | None = None,
) -> Any:
    """Load ``gguf`` into an ``xllamacpp.Server`` (listening on ``host:port`` if ``port`` is given).

    ``n_ctx`` is the context of each of the ``n_parallel`` slots.

    Raises
    ------
    RuntimeMissingError, ModelFileError
    """
    xllamacpp = import_xllamacpp()
    settings = ServerSettings(int(n_ctx), max(1, int(n_parallel)), int(n_threads or default_threads()),
                              int(n_gpu_layers))
    p = build_params(xllamacpp, gguf, settings, alias=alias, port=port, host=host, api_key=api_key)
    try:
        server = xllamacpp.Server(p)
    except Exception as exc:
        raise ModelFileError(
            f"The model file {gguf.name} could not be loaded ({type(exc).__name__}: {exc}).",
            "Check free memory, and reinstall the model packages if the file is damaged.",
        ) from exc
    _wait_until_serving(server)
    return server


def _wait_until_serving(server: Any) -> None:
    """Return once ``server``'s loop answers (a one-token completion).

    An ``xllamacpp.Server`` freed while its loop is still starting never returns from its destructor
    (seen in 3 of 5 tries freeing one at once after loading it): the thread-count switch and closing a
    backend that has not answered yet would hang. The completion goes through that loop, so once it is
    answered the server can be freed.
    """
    try:
        server.handle_completions({"prompt": " ", "max_tokens": 1, "temperature": 0.0})
    except Exception:  # noqa: BLE001 - a server that cannot complete fails on its first real request, by name
        log.debug("the readiness completion failed", exc_info=True)


@register_backend("local")
class LocalBackend:
    """Chat completions from a bundled model, in this process.

    Parameters
    ----------
    config
        ``model`` (a bundled model name) and ``params``; ``options`` may set ``n_ctx`` (per
        slot, default 4096), ``n_threads`` (default: chosen by the load, see *Threads* above), ``n_parallel``
        (slots, default: :func:`default_slots`) and ``n_gpu_layers`` (default: -1 when the
        runtime reports a GPU, else 0). ``concurrency`` is not used: the slots bound it.

    Raises
    ------
    ModelNotFoundError
        ``config.model`` is not a bundled model.
    """

    name = "local"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.params = config.params
        self.spec = get_spec(config.model)
        self.model = self.spec.name
        options = config.options
        self.n_ctx = int(options.get("n_ctx", DEFAULT_N_CTX))
        fixed = int(options["n_threads"]) if options.get("n_threads") else None
        self.n_threads = fixed or default_threads()
        #: Switches the thread count with the machine's load (``None``: fixed by the user, or one core).
        self.governor: ThreadGovernor | None = None
        if fixed is None and full_threads() > default_threads():
            self.governor = ThreadGovernor(full_threads(), default_threads(), load=self._others_load)
        self._sampler: LoadSampler | None = None
        self._n_parallel = int(options["n_parallel"]) if options.get("n_parallel") else None
        self._n_gpu_layers = int(options["n_gpu_layers"]) if options.get("n_gpu_layers") is not None else None
        self._devices: list[Device] | None = None
        self._settings: ServerSettings | None = None
        self._server: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "loaded" if self._server is not None else "not loaded"
        return f"LocalBackend(model={self.model!r}, {state})"

    # ------------------------------------------------------------------ setup
    @property
    def devices(self) -> list[Device]:
        """What the runtime can run on (asked once)."""
        if self._devices is None:
            self._devices = runtime_devices()
        return self._devices

    @property
    def gpu(self) -> Device | None:
        """The GPU the model is offloaded to (``None``: CPU only, or ``n_gpu_layers = 0``)."""
        if self._n_gpu_layers == 0:
            return None
        return gpu_of(self.devices)

    @property
    def settings(self) -> ServerSettings:
        """The server settings this backend loads with (slots and offload from the machine unless set).

        Decided on first use and kept, so the slot count does not drift with free memory.
        """
        if self._settings is None:
            gpu = self.gpu
            layers = self._n_gpu_layers if self._n_gpu_layers is not None else (-1 if gpu is not None else 0)
            slots = self._n_parallel or default_slots(gpu=gpu, n_ctx=self.n_ctx)
            self._settings = ServerSettings(self.n_ctx, max(1, slots), self.n_threads, layers if gpu is not None else 0)
        return self._settings

    @property
    def n_parallel(self) -> int:
        """Requests decoded together (and the most :meth:`chat_many` keeps in flight)."""
        return self.settings.n_parallel

    def describe(self) -> str:
        """Where and how the model runs, e.g. ``"CPU (AMD EPYC) · 1 thread · 1 parallel slot"``.

        Raises
        ------
        RuntimeMissingError
        """
        s = self.settings
        gpu = self.gpu
        threads = f"{s.n_threads} thread{'s' * (s.n_threads != 1)}"
        if self.governor is not None and gpu is None:
            threads = (f"{self.governor.full} threads while the CPU is free, {self.governor.safe} while other programs "
                       "keep it busy" + (f" (now {s.n_threads}: {self.governor.reason})" if self._server is not None
                                         else ""))
        where = (f"{gpu.label}, all layers that fit offloaded" if gpu is not None and s.n_gpu_layers < 0 else
                 f"{gpu.label}, {s.n_gpu_layers} layers offloaded" if gpu is not None else
                 next((d.label for d in self.devices if d.kind == "cpu"), "CPU"))
        return (f"{where} · {threads} · "
                f"{s.n_parallel} parallel slot{'s' * (s.n_parallel != 1)} of {s.n_ctx} tokens")

    def load(self, *, progress: ProgressFn = no_progress) -> None:
        """Assemble (first time only), verify and load the model now rather than on the first call."""
        with self._lock:
            if self._server is None:
                path = model_path(self.model, progress=progress)
                if self.governor is not None and self.gpu is None and not self.governor.threads:
                    self._sampler = self._sampler or LoadSampler()
                    self._settings = replace(self.settings, n_threads=self.governor.start(self._sampler.sample()))
                s = self.settings
                self._server = load_server(path, n_ctx=s.n_ctx, n_threads=s.n_threads, n_parallel=s.n_parallel,
                                           n_gpu_layers=s.n_gpu_layers, alias=self.model)

    # ------------------------------------------------------------------ calls
    def chat(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any] | None = None) -> ChatResult:
        """One completion.

        Raises
        ------
        LLMError
        """
        self.load()
        return self._complete(ChatRequest(messages, params).with_defaults(self.params))

    def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        progress: ProgressFn = no_progress,
        cancel: CancelToken | None = None,
        on_result: ResultCallback | None = None,
        lead_s: float = 0.0,
    ) -> list[Outcome]:
        """Run ``requests``, up to :attr:`n_parallel` at once; a failed item becomes a :class:`Failure`.

        A batch uses at most one slot per :data:`MIN_REQUESTS_PER_SLOT` requests (so a small batch
        does not pay its shared prefix in every slot). Results come back in request order; each is reported once through ``on_result`` (in
        this thread) as soon as it is known, and ``progress`` counts finished requests.

        Parameters
        ----------
        lead_s
            When > 0 the first request goes out alone; the others wait until it is answered
            or ``lead_s`` seconds have passed.

        Raises
        ------
        Cancelled
            Checked before each request is submitted; the requests already running are
            finished and reported through ``on_result`` first.
        LLMError
            Only if the model itself cannot be loaded (that fails every item alike).
        """
        token = ensure_token(cancel)
        if not requests:
            return []
        token.raise_if_cancelled()
        self.load()
        prepared = [r.with_defaults(self.params) for r in requests]
        total = len(prepared)
        results: list[Outcome | None] = [None] * total
        limit = max(1, min(self.n_parallel, -(-total // MIN_REQUESTS_PER_SLOT)))
        finished = 0
        next_index = 0
        lead_until = time.monotonic() + lead_s if lead_s > 0 else 0.0
        switch_to: int | None = None
        with ThreadPoolExecutor(max_workers=min(limit, total), thread_name_prefix="llm-local") as pool:
            running: dict[Future, int] = {}
            while finished < total:
                if switch_to is None:
                    switch_to = self._advised_threads()
                if switch_to is not None and not running and not token.cancelled:  # the requests in flight have finished
                    progress(finished / total, f"{finished}/{total} LLM calls · the model now runs on {switch_to} "
                                               f"thread{'s' * (switch_to != 1)}: {self.governor.reason}")
                    self._reload(switch_to)
                    switch_to = None
                leading = lead_until and results[0] is None and time.monotonic() < lead_until
                room = 0 if switch_to is not None else 1 if leading else limit
                while next_index < total and len(running) < room and not token.cancelled:
                    running[pool.submit(self._outcome, prepared[next_index])] = next_index
                    next_index += 1
                if not running:
                    break  # cancelled before everything was submitted (a pending switch waits for the next batch)
                done, _ = wait(running, timeout=POLL_S, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=running.__getitem__):
                    index = running.pop(future)
                    outcome = future.result()
                    results[index] = outcome
                    finished += 1
                    if on_result is not None:
                        on_result(index, outcome)
                    progress(finished / total, f"{finished}/{total} LLM calls")
        if finished < total:
            raise Cancelled("cancelled by the user")
        return [r for r in results if r is not None]

    def close(self) -> None:
        """Free the loaded model."""
        with self._lock:
            self._server = None

    @property
    def threads_now(self) -> int:
        """CPU threads the loaded model runs on (the count it will load with, before it is loaded)."""
        return self.settings.n_threads

    # ------------------------------------------------------------------ threads
    def _others_load(self) -> float | None:
        if self._sampler is None:
            self._sampler = LoadSampler()
            return None
        return self._sampler.others()

    def _advised_threads(self) -> int | None:
        """The thread count the governor wants now (``None``: keep it)."""
        governor = self.governor
        if governor is None or not governor.threads or self._server is None:
            return None
        with self._lock:
            governor.advise()
        # the governor's count, not advise()'s answer: a switch advised while the last request of a batch ran
        # is made at the start of the next batch
        wanted = governor.threads
        return wanted if wanted != self.settings.n_threads else None

    def _reload(self, threads: int) -> None:
        """Load the model again with ``threads`` CPU threads (no request may be running)."""
        with self._lock:
            self._server = None  # free the old runtime before the new one takes its memory
            self._settings = replace(self.settings, n_threads=int(threads))
            s = self.settings
            self._server = load_server(model_path(self.model), n_ctx=s.n_ctx, n_threads=s.n_threads,
                                       n_parallel=s.n_parallel, n_gpu_layers=s.n_gpu_layers, alias=self.model)

    # ------------------------------------------------------------------ internals
    def _outcome(self, request: ChatRequest) -> Outcome:
        """One request (defaults filled in) as a result or a :class:`Failure`; never raises."""
        try:
            return self._complete(request)
        except LLMError as exc:
            return Failure.from_error(exc)
        except Exception as exc:  # an unmapped runtime error: fail this item only
            return Failure.from_error(BadResponseError(
                f"The local model failed on this request ({type(exc).__name__}: {str(exc)[:200]}).",
                "Run the step again; if it recurs, report it."))

    def _complete(self, request: ChatRequest) -> ChatResult:
        check_prompt(request.messages)
        body = {"messages": list(request.messages), **request.sent_params()}
        server = self._server
        if server is None:
            raise ModelFileError(f"The model {self.model} was closed.", "Create the backend again.")
        try:
            # thread-safe: the server queues the task for its slots and this thread waits (GIL released)
            answer = server.handle_chat_completions(body)
        except (ValueError, RuntimeError) as exc:
            raise self._rejected(str(exc)) from None
        if isinstance(answer, dict) and "error" in answer:
            err = answer["error"]
            raise self._rejected(str(err.get("message", err) if isinstance(err, dict) else err))
        try:
            choice = answer["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("no text")
            usage = answer.get("usage") or {}
            timings = answer.get("timings") or {}
            if self.governor is not None and isinstance(timings, dict):
                with self._lock:
                    self.governor.decoded(float(timings.get("predicted_per_token_ms") or 0.0),
                                          int(timings.get("predicted_n") or 0))
            return ChatResult(
                text=text,
                usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                            **timing_fields(timings)),
                model=self.model,
                finish_reason=str(choice.get("finish_reason") or "stop"),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise BadResponseError(
                f"The local model returned an unusable answer ({type(exc).__name__}).",
                "Run the step again; if it recurs, report it.",
            ) from None

    def _rejected(self, detail: str) -> RequestRejectedError:
        hint = "Shorten the input or lower max_tokens."
        if "context" in detail.lower():
            hint = (f"The text does not fit the model's context ({self.n_ctx} tokens per slot): raise the n_ctx "
                    "option or shorten the text.")
        return RequestRejectedError(f"The local model rejected the request: {detail[:300]}", hint)
