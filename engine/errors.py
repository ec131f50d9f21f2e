"""Named errors whose messages tell the user what to do.

Every error the user can cause derives from :class:`CounterbiasError`. Each has a short
``code`` (stable, searchable), a ``message`` saying what went wrong and where, and a
``hint`` saying what to do about it. The GUI shows all three; the CLI prints them and
exits with :data:`EXIT_USER_ERROR`.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_INTERNAL_ERROR = 1
EXIT_USAGE = 2
EXIT_USER_ERROR = 3
EXIT_CANCELLED = 130


class CounterbiasWarning(UserWarning):
    """A warning raised by the engine (turned into an error in the test-suite)."""


class CounterbiasError(Exception):
    """Base class of every error caused by user input or environment.

    Parameters
    ----------
    message
        What went wrong, and where.
    hint
        What the user can do about it.
    """

    code = "CB000"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.hint:
            text += f"\nWhat to do: {self.hint}"
        return text

    @property
    def title(self) -> str:
        """A human title derived from the class name (``EmptyTextError`` -> ``Empty text``)."""
        name = type(self).__name__.removesuffix("Error")
        words = []
        for ch in name:
            if ch.isupper() and words:
                words.append(" ")
            words.append(ch.lower() if words else ch)
        return "".join(words)


class Cancelled(Exception):
    """Raised inside an engine function when its cancel token was set.

    Not a :class:`CounterbiasError`: cancelling is not a failure.
    """


# --------------------------------------------------------------------------- project store


class ProjectError(CounterbiasError):
    """A project file cannot be created or opened."""

    code = "CB100"


class ProjectNotFoundError(ProjectError):
    code = "CB101"


class NotAProjectError(ProjectError):
    code = "CB102"


class SchemaTooNewError(ProjectError):
    code = "CB103"


class DatasetNotFoundError(ProjectError):
    code = "CB104"


class DatasetNameTakenError(ProjectError):
    code = "CB105"


class DatasetNameError(ProjectError):
    """A dataset name that cannot be used: it holds ``/`` or a control character, is empty or only digits."""

    code = "CB106"


class ProjectCorruptError(ProjectError):
    """SQLite's own check of the project file found damaged pages or indexes."""

    code = "CB145"


class ProjectColumnsError(ProjectError):
    """A table of the project lacks columns its schema version has."""

    code = "CB146"


class StoredValueError(ProjectError):
    """A value stored in the project (a JSON column) cannot be read; the message names table, column and row."""

    code = "CB147"


# --------------------------------------------------------------------------- the project file on disk


class ProjectReadOnlyError(ProjectError):
    """The project file (or its folder) cannot be written: reading works, writing does not."""

    code = "CB140"


class DiskFullError(CounterbiasError):
    """The disk (or a file-size limit) ran out while writing the project or an export."""

    code = "CB141"


class ProjectBusyError(ProjectError):
    """Another process kept the project locked for writing longer than this one would wait."""

    code = "CB142"


class ProjectDamagedError(ProjectError):
    """The file is a Counterbias project whose bookkeeping tables are missing or broken."""

    code = "CB143"


class ReadOnlyMigrationError(ProjectError):
    """A read-only project file needs a schema upgrade, which would mean writing to it."""

    code = "CB144"


class StoredPathError(ProjectError):
    """A path stored in the project is absolute, empty or climbs out of its files folder with ``..``."""

    code = "CB150"


class StoredLinkError(StoredPathError):
    """A stored or derived path runs through a symbolic link that leads out of the project's files folder."""

    code = "CB151"


class RemoveOutsideError(ProjectError):
    """A removal was asked for a path that is not strictly inside the project's files folder (nothing removed)."""

    code = "CB152"


class RemoveFailedError(ProjectError):
    """The operating system refused to remove a file or folder inside the project's files folder."""

    code = "CB153"


# --------------------------------------------------------------------------- import


@dataclass(frozen=True)
class Location:
    """Where in an input file a problem sits (1-based line and row numbers)."""

    file: str
    row: int | None = None
    line: int | None = None
    column: str | None = None

    def describe(self) -> str:
        parts = [f"file {self.file!r}"]
        if self.row is not None:
            parts.append(f"data row {self.row}")
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.column is not None:
            parts.append(f"column {self.column!r}")
        return ", ".join(parts)


class ImportDataError(CounterbiasError):
    """A file cannot be imported. Nothing was written to the project."""

    code = "CB200"

    def __init__(self, message: str, hint: str = "", *, location: Location | None = None) -> None:
        self.location = location
        if location is not None:
            message = f"{location.describe()}: {message}"
        super().__init__(message, hint)


class UnsupportedFormatError(ImportDataError):
    code = "CB201"


class EncodingError(ImportDataError):
    code = "CB202"


class EmptyFileError(ImportDataError):
    code = "CB203"


class DelimiterError(ImportDataError):
    code = "CB204"


class RaggedRowError(ImportDataError):
    code = "CB205"


class QuotingError(ImportDataError):
    code = "CB206"


class CellTooLargeError(ImportDataError):
    code = "CB207"


class MissingColumnError(ImportDataError):
    code = "CB208"


class EmptyTextError(ImportDataError):
    code = "CB209"


class MissingLabelError(ImportDataError):
    code = "CB210"


class SingleClassError(ImportDataError):
    code = "CB211"


class MalformedJsonError(ImportDataError):
    code = "CB212"


class MappingError(ImportDataError):
    """The column mapping itself is inconsistent (e.g. no text column chosen)."""

    code = "CB213"


# Reading input files (issue 15). Codes CB250-CB259 are *warnings* about data that imports
# but is probably not what the user meant: see :mod:`engine.io.checks`.


class InputNotFoundError(ImportDataError):
    """The input path does not exist."""

    code = "CB240"


class NotAFileError(ImportDataError):
    """The input path is a folder or a device, not a regular file."""

    code = "CB241"


class FileReadError(ImportDataError):
    """The operating system refused to read the file (permissions, I/O error)."""

    code = "CB242"


class CompressionError(ImportDataError):
    """A ``.gz`` file is truncated, corrupt or not gzip-compressed at all."""

    code = "CB243"


class BinaryFileError(ImportDataError):
    """The file is an archive, a spreadsheet or other binary data, not a text table."""

    code = "CB244"


class JsonNumberTooLongError(MalformedJsonError):
    """A JSON integer has more digits than Python converts safely."""

    code = "CB245"


class JsonTooDeepError(MalformedJsonError):
    """A JSON value is nested too deeply to parse."""

    code = "CB246"


class InvalidCharacterError(ImportDataError):
    """A value holds a code point that is not a character (a lone surrogate escape)."""

    code = "CB247"


class DuplicateColumnError(MappingError):
    """A detected column name appears more than once in the header."""

    code = "CB248"


class UnknownEncodingError(EncodingError):
    """The chosen text encoding does not exist."""

    code = "CB249"


# --------------------------------------------------------------------------- export


class ExportError(CounterbiasError):
    code = "CB300"


class OutputPathError(CounterbiasError):
    """An output file (export, CSV, report, plot) would be written where it must not be."""

    code = "CB310"


class OutputIsProjectError(OutputPathError):
    """The output is a Counterbias project (or its -wal/-shm/-journal file, or a link to one)."""

    code = "CB311"


class OutputInProjectFolderError(OutputPathError):
    """The output is a project's ``_files`` folder or lies inside it."""

    code = "CB312"


class OutputNotAFileError(OutputPathError):
    """The output exists and is not a regular file (a device, FIFO or socket)."""

    code = "CB313"


class OutputIsFolderError(OutputPathError):
    """The output is a folder."""

    code = "CB314"


class OutputIsSymlinkError(OutputPathError):
    """The output is a symbolic link and following it was not asked for."""

    code = "CB315"


class OutputWriteError(OutputPathError):
    """The output file cannot be written (missing folder, no permission)."""

    code = "CB316"
