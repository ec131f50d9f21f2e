"""The bundled model's CPU threads follow the machine: every core while it is free, one fewer while it is busy."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from engine.errors import Cancelled
from engine.llm.base import ChatRequest, ChatResult
from engine.llm.config import LLMConfig
from engine.llm.cpu_threads import SETTLED_S, LoadSampler, ThreadGovernor, cpu_cores
from engine.llm.local_backend import LocalBackend
from engine.progress import CancelToken
from tests.conftest import REPO
from tests.engine.llm.conftest import SMOL, require_smollm2


class Script:
    """A clock and a load that the test sets."""

    def __init__(self) -> None:
        self.now = 0.0
        self.others: float | None = 0.0

    def clock(self) -> float:
        return self.now

    def load(self) -> float | None:
        return self.others


def governor(script: Script, **kw) -> ThreadGovernor:
    return ThreadGovernor(2, 1, load=script.load, clock=script.clock, check_s=30, cooldown_s=60, **kw)


def test_it_starts_on_every_core_when_the_machine_is_free_and_one_fewer_when_it_is_busy():
    s = Script()
    assert governor(s).start(0.05) == 2
    busy = governor(s)
    assert busy.start(0.9) == 1
    assert "0.9 cores" in busy.reason


def test_a_busy_machine_takes_a_core_back_at_the_next_look_not_before():
    s = Script()
    g = governor(s)
    g.start(0.0)
    s.others = 1.0
    s.now = 3
    assert g.advise() is None  # too soon after the previous look
    s.now = 6
    assert g.advise() == 1
    assert g.threads == 1 and "other programs use 1.0 cores" in g.reason
    s.now = 70
    assert g.advise() is None  # still busy: stays


def test_decoding_that_slows_down_fourfold_takes_a_core_back_at_once():
    s = Script()
    g = governor(s)
    g.start(0.0)
    for ms in (90, 95, 100):
        g.decoded(ms, 20)
    assert g.advise() is None
    s.others = None  # no load reading yet: the decoding speed alone decides
    for ms in (800, 850, 900):
        g.decoded(ms, 20)
    s.now = 5
    assert g.advise() == 1
    assert "decoding slowed down" in g.reason


def test_short_answers_do_not_count_as_a_slowdown():
    s = Script()
    g = governor(s)
    g.start(0.0)
    for ms in (90, 900, 900, 900):
        g.decoded(ms, 2 if ms == 900 else 20)  # two tokens: mostly overhead
    assert g.advise() is None


def test_all_cores_come_back_once_the_machine_is_free_and_the_wait_is_over():
    s = Script()
    g = governor(s)
    g.start(0.0)
    s.others, s.now = 1.0, 30
    assert g.advise() == 1
    s.others, s.now = 0.1, 61
    assert g.advise() is None  # free, but found busy only 31 s ago (wait 60 s)
    s.now = 95
    assert g.advise() == 2
    assert g.reason == "the CPU is free"


def test_every_core_comes_back_only_after_the_machine_stayed_free_look_after_look():
    s = Script()
    g = governor(s)
    g.cooldown_s, g.check_s = 0, 15
    g.start(0.9)
    s.others, s.now = 0.1, 6
    assert g.advise() is None  # free for 6 s only (looks cover 0-6)
    s.others, s.now = 0.4, 12
    assert g.advise() is None  # not free in this look: the free spell starts again
    s.others, s.now = 0.1, 18
    assert g.advise() is None
    s.now = 24
    assert g.advise() is None  # free since 12: 12 s
    s.now = 30
    assert g.advise() == 2


def test_the_wait_doubles_when_the_machine_is_busy_again_soon_and_resets_after_a_settled_spell():
    s = Script()
    g = governor(s)
    g.start(0.0)
    s.others, s.now = 1.0, 30
    assert g.advise() == 1
    s.others, s.now = 0.0, 90
    assert g.advise() == 2
    s.others, s.now = 1.0, 120  # busy again 30 s after the try: wait 120 s now
    assert g.advise() == 1
    s.others, s.now = 0.0, 200
    assert g.advise() is None
    s.now = 240
    assert g.advise() == 2
    s.others, s.now = 1.0, 240 + SETTLED_S + 1  # busy after a long free spell: back to 60 s
    assert g.advise() == 1
    s.others, s.now = 0.0, s.now + 61
    assert g.advise() == 2


def test_the_load_sampler_counts_other_processes_and_not_this_one():
    # scripted counters (wall clock, every process's busy CPU seconds, this process's): the load of the
    # machine running the test never enters
    readings = iter([(0.0, 100.0, 10.0), (0.05, 100.0, 10.0), (1.0, 101.8, 10.9), (2.0, 102.7, 11.8)])
    sampler = LoadSampler(counters=lambda: next(readings))
    assert sampler.others() is None  # under 0.1 s since the first reading
    assert sampler.others() == pytest.approx(0.9)  # 1.8 core-seconds in 1 s, 0.9 of them this process's
    assert sampler.others() == pytest.approx(0.0)  # only this process was busy


def test_a_thread_count_the_user_set_is_never_changed():
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL, options={"n_threads": 1}))
    assert backend.governor is None
    assert backend.threads_now == 1


@pytest.mark.skipif(cpu_cores() < 2, reason="one core: nothing to choose")
def test_the_real_model_loads_on_fewer_threads_under_load_and_takes_every_core_once_the_machine_is_free(
        tmp_path, monkeypatch):
    require_smollm2()
    monkeypatch.setenv("COUNTERBIAS_HOME", str(tmp_path))
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL, params={"max_tokens": 8, "temperature": 0},
                                     options={"n_ctx": 512}))
    assert "threads while the CPU is free" in backend.describe()
    g = backend.governor
    # the load and the clock are the test's: busy at load, free from then on; a second passes per reading
    script = Script()

    def clock() -> float:
        script.now += 1.0
        return script.now

    g.look_s, g.check_s, g.cooldown_s, g.idle_cores = 1.0, 1.0, 0.0, 0.6
    g.clock = clock
    backend._sampler = SimpleNamespace(sample=lambda: 1.0, others=lambda: None)
    backend.load()
    assert backend.threads_now == g.safe
    assert "other programs use" in backend.describe()
    g.load = lambda: 0.0
    messages: list[str] = []
    requests = [ChatRequest([{"role": "user", "content": f"Name a colour, number {i}."}]) for i in range(6)]
    out = backend.chat_many(requests, progress=lambda f, m: messages.append(m))
    try:
        assert all(isinstance(o, ChatResult) and o.text for o in out)
        assert backend.threads_now == g.full
        switched = [m for m in messages if "now runs on" in m]
        assert switched and f"{g.full} threads: the CPU is free" in switched[0]
        assert "(now " in backend.describe() and "the CPU is free" in backend.describe()
    finally:
        backend.close()


@pytest.mark.skipif(cpu_cores() < 2, reason="one core: nothing to choose")
def test_a_switch_advised_during_the_last_request_of_a_batch_is_made_when_the_next_batch_starts(tmp_path, monkeypatch):
    require_smollm2()
    monkeypatch.setenv("COUNTERBIAS_HOME", str(tmp_path))
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL, params={"max_tokens": 8, "temperature": 0},
                                     options={"n_ctx": 512}))
    g = backend.governor
    g.look_s = 0.0
    # a free machine at load and during the first batch: the real load of a busy CI machine must not advise
    # a switch here (it would be made silently when the next batch starts)
    backend._sampler = SimpleNamespace(sample=lambda: 0.0, others=lambda: None)
    backend.load()
    backend.chat_many([ChatRequest([{"role": "user", "content": "Say hi."}])])
    assert backend.threads_now == g.full and g.threads == g.full
    readings = iter([None])  # nothing at the first look (before the request), busy at the next (while it runs)
    g.load = lambda: next(readings, 1.0)
    try:
        backend.chat_many([ChatRequest([{"role": "user", "content": "Say hello."}])])
        assert g.threads == g.safe  # advised while the only request ran
        messages: list[str] = []
        out = backend.chat_many([ChatRequest([{"role": "user", "content": "Say bye."}])],
                                progress=lambda f, m: messages.append(m))
        assert isinstance(out[0], ChatResult)
        assert backend.threads_now == g.safe
        assert any(f"now runs on {g.safe} thread" in m for m in messages)
    finally:
        backend.close()


@pytest.mark.skipif(cpu_cores() < 2, reason="one core: nothing to choose")
def test_a_batch_cancelled_with_a_switch_pending_stops_without_loading_the_model_again(tmp_path, monkeypatch):
    require_smollm2()
    monkeypatch.setenv("COUNTERBIAS_HOME", str(tmp_path))
    backend = LocalBackend(LLMConfig(backend="local", model=SMOL, params={"max_tokens": 8, "temperature": 0},
                                     options={"n_ctx": 512, "n_parallel": 1}))
    g = backend.governor
    g.look_s = 0.0
    backend._sampler = SimpleNamespace(sample=lambda: 0.0, others=lambda: None)  # a free machine at load
    backend.load()
    assert backend.threads_now == g.full
    readings = iter([None])  # free before the first request, busy once it has run
    g.load = lambda: next(readings, 1.0)
    token = CancelToken()
    messages: list[str] = []
    requests = [ChatRequest([{"role": "user", "content": f"Say {w}."}]) for w in ("hello", "bye")]
    try:
        with pytest.raises(Cancelled):
            backend.chat_many(requests, cancel=token, on_result=lambda i, o: token.cancel(),
                              progress=lambda f, m: messages.append(m))
        assert g.threads == g.safe  # the switch was advised ...
        assert backend.threads_now == g.full  # ... and not made: the user had cancelled
        assert not any("now runs on" in m for m in messages)
        out = backend.chat_many([ChatRequest([{"role": "user", "content": "Say bye."}])])
        assert isinstance(out[0], ChatResult) and backend.threads_now == g.safe  # made at the next batch
    finally:
        backend.close()


def test_a_model_freed_at_once_after_loading_is_freed(tmp_path):
    """xllamacpp's server, freed while its loop was still starting, never returned from its destructor (3 of
    5 tries): a thread-count switch before the first request, or a backend closed before it answered, hung."""
    require_smollm2()
    script = ("from engine.llm.local_backend import load_server, model_path\n"
              "p = model_path('smollm2-135m')\n"
              "for _ in range(4):\n"
              "    s = load_server(p, n_ctx=256, n_threads=1)\n"
              "    s = None\n"
              "print('freed')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COUNTERBIAS_HOME": str(tmp_path)}, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip().endswith("freed"), done.stderr[-2000:]
