"""Reading a language's conformance cases from TOML files (``<language>/cases/*.toml``), as
rdflib's W3C runner reads the SPARQL manifests: every case is data, and one runner per language
passes each through one function.

What this module knows is what the languages' case files share (each language's README gives
the rest): a file's ``[[case]]`` entries, each with a unique ``id``; named texts (``[queries]``
or ``[rules]``) with the ``printed`` text and its ``restorations``, or a ``text`` of the
suite's own; per-case ``edits``; an ``xfail`` reason, which makes the case a strict expected
failure.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Case:
    """One ``[[case]]`` of ``file``, with the file's top-level tables beside it (``shared``)."""

    id: str
    file: str
    data: dict
    shared: dict = field(repr=False)

    def __getitem__(self, key):
        return self.data[key]

    def get(self, key, default=None):
        return self.data.get(key, default)

    def __contains__(self, key) -> bool:
        return key in self.data

    def named(self, table: str, name: str):
        """The file's ``[table.name]`` entry (a named query, rule, stream, ...)."""
        try:
            return self.shared[table][name]
        except KeyError:
            raise KeyError(f"{self.file}: case {self.id} names [{table}.{name}], which is not in the file") from None


def load(folder: Path) -> list[Case]:
    """Every case of every ``*.toml`` in ``folder``, in file order; ids are unique across files."""
    cases: list[Case] = []
    for path in sorted(folder.glob("*.toml")):
        document = tomllib.loads(path.read_text(encoding="utf-8"))
        shared = {k: v for k, v in document.items() if k != "case"}
        for entry in document.get("case", []):
            cases.append(Case(entry["id"], path.name, entry, shared))
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"case ids given twice in {folder}: {duplicates}"
    return cases


def edit(text: str, edits: list[dict], where: str) -> str:
    """``text`` with each ``{replace, by}`` applied in order; each must occur in the text, so
    that a restoration or edit that no longer applies fails instead of being skipped."""
    for e in edits:
        assert e["replace"] in text, f"{where}: {e['replace']!r} does not occur in the text"
        text = text.replace(e["replace"], e["by"])
    return text


def text_of(entry: dict, form: str, where: str) -> str:
    """A named text in ``form``: ``printed`` as the paper prints it, ``restored`` with its
    ``restorations`` applied (the form that runs; the same text where there are none); a
    ``text`` (the suite's own, printed nowhere) has one form."""
    if "text" in entry:
        return entry["text"]
    if form == "printed":
        return entry["printed"]
    assert form == "restored", f"{where}: form is 'printed' or 'restored', not {form!r}"
    return edit(entry["printed"], entry.get("restorations", []), where)


def params(cases: list[Case]) -> list:
    """``pytest.param`` per case, id the case's id; ``xfail`` makes it a strict expected failure,
    and only a failed assertion counts as that failure (an error in the engine is not the gap
    the case states)."""
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=c["xfail"])]
                         if "xfail" in c else [])
            for c in cases]
