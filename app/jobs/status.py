"""The life cycle of a background job, shared by the runner and its table model."""

from __future__ import annotations

from enum import Enum

__all__ = ["JobStatus"]


class JobStatus(str, Enum):
    """Life cycle of a job: queued → running → done | failed | cancelled."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_active(self) -> bool:
        """Whether the job has not ended yet (queued or running)."""
        return self in (JobStatus.QUEUED, JobStatus.RUNNING)

    @property
    def label(self) -> str:
        """Human text for the Status column."""
        return self.value.capitalize()
