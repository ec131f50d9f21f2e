"""How many CPU threads the bundled model should use now.

Every core while the machine is free, one fewer while other programs keep a core busy.

llama.cpp's threads meet at a barrier after every operation of a decoding step. Measured
with Qwen2.5-Coder-1.5B on a 2-core machine, real edit requests of the counterbias step
(seven each, seconds per request; ``benchmarks/llm_threads.py`` measures it end to end):

=====================  ============  ==================================
threads                machine free  another program busy on one core
=====================  ============  ==================================
1                      10.5          9.6
2 (all cores)          5.3           26.6 (decoding 9x slower per token)
=====================  ============  ==================================

So using every core doubles the throughput on a free laptop, and collapses it as soon as a
browser or a second model keeps one core busy. :class:`ThreadGovernor` picks between the two:
it reads how much CPU *other* processes used since its last look (:class:`LoadSampler`; the
counters of the operating system, nothing is run) and how fast the model decodes, and says
when to switch. The backend switches between requests (the model is loaded again with the
other thread count, a few seconds). A user's explicit thread count is never changed.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Other programs' load (in cores) under which the machine counts as free.
IDLE_CORES = 0.25
#: Other programs' load (in cores) over which a thread of the model would have to wait for a core.
BUSY_CORES = 0.5
#: Fewest seconds between two looks at the load (a look is taken after a request, when this much time passed):
#: a busy machine takes a core back at the first look that finds it busy, since every request decoded on a
#: shared core costs several times its time.
LOOK_S = 5.0
#: Seconds the machine must have been found free, look after look, before every core is used again.
CHECK_S = 15.0
#: A decoding step this many times slower than the best seen with all cores means the cores are shared.
COLLAPSE = 4.0
#: Seconds to wait, after the machine was found busy, before all cores are tried again; doubled
#: (up to :data:`MAX_COOLDOWN_S`) when the machine is found busy again within :data:`SETTLED_S` of a
#: try: a reload costs a few seconds and the prompt cache.
COOLDOWN_S = 60.0
MAX_COOLDOWN_S = 1800.0
SETTLED_S = 600.0
#: Decoded tokens an answer needs before its speed counts (short answers are mostly overhead).
MIN_TOKENS = 4


def cpu_cores() -> int:
    """Cores this process may run on (its affinity where the system says, else every core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class LoadSampler:
    """CPU used by other processes between two looks, in cores (1.0 = one core busy the whole time).

    It reads the system's and this process's CPU time counters (``psutil``); the difference is
    what other programs used (time stolen by a hypervisor counts as theirs). Reading never waits.

    Parameters
    ----------
    counters
        Returns ``(monotonic seconds, CPU seconds every process used, CPU seconds this process
        used)``; default: the real counters. Tests pass scripted ones.
    """

    def __init__(self, counters: Callable[[], tuple[float, float, float]] | None = None) -> None:
        if counters is None:
            import psutil

            self._psutil = psutil
            self._me = psutil.Process()
            counters = self._real_counters
        self._counters = counters
        self._last = self._counters()

    def _real_counters(self) -> tuple[float, float, float]:
        t = self._psutil.cpu_times()
        idle = t.idle + getattr(t, "iowait", 0.0)
        busy = sum(t) - idle - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)  # guest time is in user
        mine = self._me.cpu_times()
        return time.monotonic(), busy, mine.user + mine.system

    def others(self) -> float | None:
        """Other processes' load since the previous call (or since creation); ``None`` if under 0.1 s passed."""
        now = self._counters()
        wall = now[0] - self._last[0]
        if wall < 0.1:
            return None
        load = max(0.0, (now[1] - self._last[1]) - (now[2] - self._last[2])) / wall
        self._last = now
        return load

    def sample(self, seconds: float = 0.3) -> float:
        """Other processes' load over the next ``seconds`` (this one waits)."""
        self.others()
        time.sleep(max(seconds, 0.1))
        load = self.others()
        return 0.0 if load is None else load


@dataclass
class ThreadGovernor:
    """Chooses between ``full`` threads (every core) and ``safe`` threads (a core left to others).

    Parameters
    ----------
    full, safe
        The two thread counts (``full > safe >= 1``).
    load
        Returns other programs' load in cores since its previous call, or ``None`` when too
        little time passed (a :meth:`LoadSampler.others`).
    clock
        Seconds, monotonic.
    look_s, check_s, idle_cores, busy_cores, collapse, cooldown_s
        See the module constants.

    Notes
    -----
    Call :meth:`start` once (it returns the thread count to load with), :meth:`decoded` for each
    answer and :meth:`advise` between requests; :meth:`advise` returns the thread count to switch to,
    or ``None`` to stay.
    """

    full: int
    safe: int
    load: Callable[[], float | None]
    clock: Callable[[], float] = time.monotonic
    look_s: float = LOOK_S
    check_s: float = CHECK_S
    idle_cores: float = IDLE_CORES
    busy_cores: float = BUSY_CORES
    collapse: float = COLLAPSE
    cooldown_s: float = COOLDOWN_S
    threads: int = field(init=False, default=0)
    reason: str = field(init=False, default="")
    _checked: float = field(init=False, default=0.0)
    _free_since: float | None = field(init=False, default=None)
    _busy_since: float | None = field(init=False, default=None)
    _full_since: float = field(init=False, default=0.0)
    _cooldown: float = field(init=False, default=0.0)
    _best: float | None = field(init=False, default=None)
    _recent: list[float] = field(init=False, default_factory=list)

    def start(self, load_now: float) -> int:
        """The thread count to load with, given other programs' load measured just now."""
        self._checked = self.clock()
        self._cooldown = self.cooldown_s
        if load_now < self.idle_cores:
            self.threads, self.reason = self.full, "the CPU is free"
            self._full_since = self._checked
        else:
            self.threads, self.reason = self.safe, f"other programs use {load_now:.1f} cores"
            self._busy_since = self._checked
        return self.threads

    def decoded(self, ms_per_token: float, tokens: int) -> None:
        """Record the decoding speed of one answer (milliseconds per token)."""
        if tokens >= MIN_TOKENS and ms_per_token > 0 and self.threads == self.full:
            self._recent.append(ms_per_token)
            if self._best is None or ms_per_token < self._best:
                self._best = ms_per_token

    def advise(self) -> int | None:
        """The thread count to switch to now, or ``None`` (also between two looks at the load)."""
        now = self.clock()
        collapsed = (self.threads == self.full and self._best is not None and len(self._recent) >= 3
                     and statistics.median(self._recent[-3:]) > self.collapse * self._best)
        if now - self._checked < self.look_s and not collapsed:
            return None
        load = self.load()
        if load is None and not collapsed:
            return None
        looked, self._checked = self._checked, now
        self._recent.clear()
        if load is None or load >= self.idle_cores:
            self._free_since = None
        elif self._free_since is None:
            self._free_since = looked  # the load was measured since the previous look
        if self.threads == self.full and (collapsed or (load is not None and load > self.busy_cores)):
            if self._busy_since is not None and now - self._full_since < SETTLED_S:
                self._cooldown = min(self._cooldown * 2, MAX_COOLDOWN_S)  # busy again soon: wait longer next time
            else:
                self._cooldown = self.cooldown_s
            self._busy_since = now
            self.threads = self.safe
            self.reason = ("decoding slowed down: the cores are shared" if collapsed
                           else f"other programs use {load:.1f} cores")
            return self.threads
        if (self.threads == self.safe and self._free_since is not None and now - self._free_since >= self.check_s
                and (self._busy_since is None or now - self._busy_since >= self._cooldown)):
            self.threads, self.reason = self.full, "the CPU is free"
            self._full_since = now
            return self.threads
        return None
