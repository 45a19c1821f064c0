"""Golden fixture files: many cases in one file, each an input and the plan it must give, read
by one loader (sqlglot's ``tests/fixtures/optimizer/*.sql`` and ``load_sql_fixture_pairs``).

A file is a sequence of cases. A case opens with a ``# title:`` line; ``# key: value`` lines
right after it are its metadata (a lowercase key, e.g. ``# fires: yes``); the ``#`` lines that
follow are its description, free text saying why the expected plan is what it is. Then come its
input files, each under a ``-- file: NAME`` line (the name's suffix says the language, as for
``compiler.compile_file``: ``.rsp``, ``.dotr``, ``.tasparql``), and last the expected plan under
``-- plan``::

    # title: the pattern with most constants first
    # fires: yes
    # ?obs hasValue ?v has one constant, the type pattern two.
    -- file: order_joins.rsp
    REGISTER QUERY order_joins AS
    ...
    -- plan
    WindowQuery order_joins SELECT RSTREAM
    ...

A file's text runs to the next line that starts with ``-- `` (so it may hold ``#`` comments of
its own); the plan runs to the next ``# title:`` line or the end of the file (a plan never has
a line that starts with ``#``). Blank lines at the end of a file's text or a plan separate
cases and are not part of them; a plan is compared with a final newline, as ``explain`` ends.
Lines before the first case are comments on the whole file. Titles are unique in a file.

``regold(case, plan)`` rewrites one case's plan in its file (``RSP_REGOLD=1``), leaving every
other line, titles, descriptions and inputs included, as it was."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_META = re.compile(r"# ([a-z_]+): (.*)$")
_FILE = re.compile(r"-- file: (\S+)$")


@dataclass(frozen=True)
class Case:
    path: Path  # the fixture file
    line: int  # of its ``# title:``, from 1
    title: str
    meta: dict[str, str] = field(compare=False)
    description: str
    files: tuple[tuple[str, str], ...]  # (name, text), in the order written
    plan: str

    def __str__(self) -> str:
        return f"{self.path.name}:{self.line} {self.title}"

    def text(self, name: str | None = None) -> str:
        """The text of the input file ``name`` (by default the case's only one)."""
        if name is None:
            (only,) = self.files
            return only[1]
        return dict(self.files)[name]

    def write_inputs(self, directory: Path) -> list[Path]:
        """The input files written to ``directory`` under their names (for the CLI)."""
        directory.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, text in self.files:
            (directory / name).write_text(text)
            paths.append(directory / name)
        return paths


def load_cases(path: Path) -> list[Case]:
    return [case for case, _ in _parse(path, path.read_text().splitlines())]


def find_case(path: Path, title: str) -> Case:
    found = [case for case in load_cases(path) if case.title == title]
    if not found:
        raise LookupError(f"{path.name}: no case titled {title!r}")
    return found[0]


def regold(case: Case, plan: str) -> None:
    """Writes ``plan`` as ``case``'s expected plan in its file, in place of the one there."""
    lines = case.path.read_text().splitlines()
    (start, stop), *_ = (span for c, span in _parse(case.path, lines) if c.title == case.title)
    lines[start:stop] = plan.rstrip("\n").split("\n")
    case.path.write_text("\n".join(lines) + "\n")


def _parse(path: Path, lines: list[str]) -> list[tuple[Case, tuple[int, int]]]:
    """The cases with the line span (start, stop) of each one's plan."""
    starts = [i for i, line in enumerate(lines) if line.startswith("# title: ")]
    _check_preamble(path, lines[: starts[0]] if starts else lines)
    cases: list[tuple[Case, tuple[int, int]]] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("# title: "):
            i += 1
            continue
        case, span, i = _case(path, lines, i)
        if any(c.title == case.title for c, _ in cases):
            raise ValueError(f"{path.name}:{case.line}: title {case.title!r} given twice")
        cases.append((case, span))
    return cases


def _check_preamble(path: Path, lines: list[str]) -> None:
    for n, line in enumerate(lines, 1):
        if line.strip() and not line.startswith("#"):
            raise ValueError(f"{path.name}:{n}: before the first '# title:' only comments")


def _case(path: Path, lines: list[str], i: int) -> tuple[Case, tuple[int, int], int]:
    first = i
    title = lines[i].removeprefix("# title: ").strip()
    i += 1
    meta: dict[str, str] = {}
    while i < len(lines) and (m := _META.match(lines[i])):
        meta[m[1]] = m[2].strip()
        i += 1
    description = []
    while i < len(lines) and lines[i].startswith("#"):
        description.append(lines[i].removeprefix("#").removeprefix(" "))
        i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    files = []
    while i < len(lines) and (m := _FILE.match(lines[i])):
        i += 1
        start = i
        while i < len(lines) and not lines[i].startswith("-- "):
            i += 1
        files.append((m[1], _block(lines[start:i])))
    where = f"{path.name}:{first + 1}"
    if not files:
        raise ValueError(f"{where}: a case needs its input under '-- file: NAME'")
    if i >= len(lines) or lines[i] != "-- plan":
        raise ValueError(f"{where}: the input files end at '-- plan', its expected plan")
    i += 1
    start = i
    while i < len(lines) and not lines[i].startswith("# title: "):
        i += 1
    stop = start + len(_block(lines[start:i]).splitlines())
    case = Case(
        path,
        first + 1,
        title,
        meta,
        "\n".join(description),
        tuple(files),
        _block(lines[start:i]),
    )
    return case, (start, stop), i


def _block(lines: list[str]) -> str:
    """Lines as a text with a final newline, the blank lines at its end left out."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "".join(line + "\n" for line in lines)
