"""Background jobs: the runner (engine calls on a thread pool), their status and their table model.

See :mod:`app.jobs.runner` for the design.
"""

from app.jobs.model import JobRow, JobsTableModel, format_duration
from app.jobs.job import Job
from app.jobs.runner import JobRunner
from app.jobs.status import JobStatus

__all__ = ["Job", "JobRow", "JobRunner", "JobStatus", "JobsTableModel", "format_duration"]
