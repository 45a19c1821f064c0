"""Reading the TA-SPARQL cases of ``cases/*.toml`` (the format: README.md): each case's texts
resolved (the one TA-SPARQL runs, the one rdflib runs over ``rsp export``'s output, Table 2's
translation and its TA-SPARQL form) and the checks the runner makes of it."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

CASES = Path(__file__).with_name("cases")


@dataclass(frozen=True)
class Case:
    """One case of a manifest: ``query`` is the TA-SPARQL text that runs (the printed text where
    it runs as printed), ``printed`` the text as printed (or ``None``), ``prefix`` the manifest's
    prefixes (for rdflib, and for the case itself when it says ``prefix = true``)."""

    id: str
    manifest: str
    printed: str | None
    query: str
    prefix: str
    fields: dict

    def __getitem__(self, key: str):
        return self.fields[key]

    def get(self, key: str, default=None):
        return self.fields.get(key, default)

    @property
    def text(self) -> str:
        """What TA-SPARQL runs."""
        return (self.prefix if self.fields.get("prefix") else "") + self.query

    def rdflib_text(self) -> str:
        """What rdflib runs over the export: the query with the manifest's prefixes and the
        case's ``rdflib.changes``."""
        return self.prefix + edited(self.query, self.fields["rdflib"].get("changes", []))

    def table2_tasparql(self) -> str:
        """Table 2's translation as TA-SPARQL runs it (``table2.tasparql``'s changes)."""
        return edited(self.fields["table2"]["sparql"], self.fields["table2"]["tasparql"])

    def checks(self) -> list[str]:
        """``answers`` (the rows worked out by hand), ``same-as`` (another TA-SPARQL form gives
        the same rows), ``bound`` (which variables each row binds), ``rdflib`` (rdflib's bag over
        the export), ``table2-rdflib`` (Table 2's translation by rdflib over the export),
        ``table2-tasparql`` (Table 2's translation in TA-SPARQL gives the same rows), ``error``."""
        has = self.fields.__contains__
        out = [check for check, key in (("answers", "rows"), ("same-as", "same_as"), ("bound", "bound"),
                                         ("rdflib", "rdflib"), ("table2-rdflib", "table2"), ("error", "error"))
               if has(key)]
        if has("table2") and "tasparql" in self.fields["table2"]:
            out.append("table2-tasparql")
        return out


def edited(text: str, edits: list[dict]) -> str:
    """``text`` with each edit's ``replace`` (its old text must occur in it)."""
    for edit in edits:
        if "replace" in edit:
            old, new = edit["replace"]
            assert old in text, f"{old!r} is not in the text it edits"
            text = text.replace(old, new)
    return text


def load_cases(names: Sequence[str] = ("paper", "union_optional")) -> list[Case]:
    cases = []
    for name in names:
        with open(CASES / f"{name}.toml", "rb") as f:
            doc = tomllib.load(f)
        ids = [c["id"] for c in doc["case"]]
        assert len(set(ids)) == len(ids), f"{name}.toml: two cases share an id"
        for own in doc["case"]:
            printed = own.get("printed")
            if "query" in own:
                assert all("replace" not in e for e in own.get("restorations", [])), \
                    "a case that writes its query out states its restorations in prose"
                query = own["query"]
            else:
                query = edited(printed, own.get("restorations", []))
            cases.append(Case(own["id"], name, printed, query, doc.get("prefix", ""), own))
    return cases
