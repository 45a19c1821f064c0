"""Reading a user's text file: UTF-8 or a clear error, never a ``UnicodeDecodeError`` traceback."""

from __future__ import annotations

import io
from pathlib import Path

from rsp_jobs.errors import InputError

__all__ = ["decode", "open_text", "read_text"]


def read_text(path: str | Path, what: str = "") -> str:
    """The file's text. A file that is not UTF-8 (binary junk, Latin-1) is an InputError naming
    the file, the line and the byte offset of the first bad byte; ``what`` says what the file
    was meant to be ("query", "stream file") in that message."""
    return decode(Path(path).read_bytes(), path, what)


def decode(data: bytes, path: str | Path, what: str = "") -> str:
    """``data``, read from ``path``, as UTF-8 text, or the InputError ``read_text`` raises."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        kind = f"{what} " if what else ""
        raise InputError(
            f"{path}:{line}: the {kind}file is not UTF-8 text "
            f"(byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None


def open_text(path: str | Path, what: str = "") -> io.StringIO:
    """``read_text`` as a file object, for csv readers: decoded whole first, so a bad byte is
    reported before any row is taken."""
    return io.StringIO(read_text(path, what), newline="")
