"""Errors a user sees. Each names where the problem is (file, line, column or field) so that it
can be fixed without reading a stack trace."""

from __future__ import annotations

from collections.abc import Iterable


class RspError(Exception):
    """Base class: the CLI prints these as one clear message and exits non-zero."""


class QuerySyntaxError(RspError):
    """The query text does not parse."""

    def __init__(
        self, source: str, line: int, column: int, message: str, expected: Iterable[str] = ()
    ):
        self.source, self.line, self.column = source, line, column
        self.expected = sorted(set(expected))
        text = f"{source}:{line}:{column}: {message}"
        if self.expected:
            text += f"; expected one of: {', '.join(self.expected)}"
        super().__init__(text)


class UnsupportedConstruct(RspError):
    """The query parses but uses something the engine does not evaluate."""

    def __init__(
        self, source: str, construct: str, line: int | None = None, column: int | None = None
    ):
        where = source if line is None else f"{source}:{line}:{column or 1}"
        self.construct = construct
        super().__init__(f"{where}: unsupported construct: {construct}")


class QueryError(RspError):
    """The query is well formed but cannot be evaluated as written (for example a FROM graph
    with no file bound to it)."""


class InputError(RspError):
    """An input file (stream or background) cannot be read at all."""


class StorageError(RspError, OSError):
    """A file the platform writes cannot be written (a full disk, a read-only file system):
    nothing half-written is left where readers look, and the input it came from stays where it
    was, so the same command succeeds once there is room. An OSError too, so that code that
    handles a failed write (of the lake, or of anything else) handles this one."""
