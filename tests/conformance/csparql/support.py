"""Running a printed C-SPARQL example the way a user would: its stream files read into a fresh
lake (``rsp evaluate``'s loading), the query text compiled and evaluated, the answer per window
as plain values to compare with the one worked out by hand; and reading the cases of
``cases/*.toml`` (the format: README.md)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest.lake import Lake, load_files

DATA = Path(__file__).with_name("data")
CASES = Path(__file__).with_name("cases")
ONTO = "http://.../sr4ld2013-onto#"  # the tutorial's prefix, as printed


def run(tmp_path: Path, text: str, streams: Sequence[tuple[str, str]], background: Sequence[str] = (),
        entailment: str = "simple", source: str = "example.rsp") -> list[dict]:
    """Evaluate ``text`` over ``streams`` ((stream IRI, file name under data/), in delivery
    order) with ``background`` files (names under data/); the reported windows."""
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(iri, DATA / name) for iri, name in streams])
    return [w.to_json() for w in evaluate(compiler.compile(text, source), lake, [str(DATA / b) for b in background],
                                          entailment=entailment)]


def local(value: str) -> str:
    """An IRI's local name (after the last # or /), the way the papers print terms."""
    return value.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def plain(term: dict) -> object:
    if term["type"] == "uri":
        return local(term["value"])
    if term.get("datatype", "").endswith(("#integer", "#decimal", "#double")):
        return float(term["value"]) if "." in term["value"] or "e" in term["value"].lower() else int(term["value"])
    return term["value"]


def answers(windows: list[dict], *variables: str) -> dict[str, list[tuple]]:
    """{close (HH:MM:SS): sorted rows of ``variables``} for SELECT windows, every window kept
    (an empty one too: C-SPARQL reports each window that holds data)."""
    return {w["window_close"][11:19]: sorted(tuple(plain(b[v]) if v in b else None for v in variables)
                                              for b in w["bindings"]) for w in windows}


def triples(windows: list[dict]) -> dict[str, list[str]]:
    """{close (HH:MM:SS): sorted triples with local names} for CONSTRUCT and DESCRIBE windows;
    blank nodes become ``_`` so that the answer does not depend on their labels."""
    def term(text: str) -> str:
        if text.startswith("_:"):
            return "_"
        return local(text.strip("<>")) if text.startswith("<") else text

    out = {}
    for w in windows:
        out[w["window_close"][11:19]] = sorted(" ".join(term(t) for t in line[:-2].split(" ", 2))
                                               for line in w["triples"])
    return out


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def closes(first: str, last: str, step_s: int) -> list[str]:
    """The window closes from ``first`` to ``last`` (HH:MM:SS, one day) every ``step_s``."""
    def seconds(hms: str) -> int:
        h, m, s = map(int, hms.split(":"))
        return h * 3600 + m * 60 + s
    return [f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}" for t in range(seconds(first), seconds(last) + 1, step_s)]


# ------------------------------------------------------------------------------- the cases

INHERITED = ("section", "streams", "background", "entailment", "select")  # what a case takes from its base


@dataclass(frozen=True)
class Case:
    """One case of a manifest, its texts resolved: ``query`` is the form that runs (``None`` for
    none), ``printed`` the text as printed (or ``None``), ``fields`` the rest as written, with
    what it takes from its base."""

    id: str
    manifest: str
    printed: str | None
    query: str | None
    fields: dict
    ranges: dict

    def __getitem__(self, key: str):
        return self.fields[key]

    def get(self, key: str, default=None):
        return self.fields.get(key, default)

    @property
    def regimes(self) -> list[str]:
        regime = self.fields.get("entailment", "simple")
        return [regime] if isinstance(regime, str) else list(regime)

    def checks(self) -> list[str]:
        """What the runner checks of this case: that the printed text is refused (``printed``),
        that the query is refused (``error``), the answers per window under each regime."""
        out = ["printed"] if "printed_error" in self.fields else []
        if "error" in self.fields:
            out.append("error")
        if "windows" in self.fields:
            out += ["answers"] if len(self.regimes) == 1 else [f"answers[{r}]" for r in self.regimes]
        return out

    def expected(self) -> dict[str, list]:
        """{close (HH:MM:SS): sorted rows}: every group's rows at each of its closes, the rows of
        groups that share a close together."""
        out: dict[str, list] = {}
        for group in self.fields["windows"]:
            named = group["closes"]
            if isinstance(named, str):
                at_closes = self.ranges[named]
            elif isinstance(named, dict):
                at_closes = closes(named["from"], named["to"], named["every"])
            else:
                at_closes = named
            for c in at_closes:
                out.setdefault(c, []).extend(tuple(r) if isinstance(r, list) else r for r in group["rows"])
        return {c: sorted(rows) for c, rows in out.items()}


def edited(text: str, fields: dict, shared: dict) -> str:
    """``text`` with the case's restorations and changes (each must occur in it), then the
    manifest's shared restorations it names in ``restore`` (applied where they occur)."""
    for edit in fields.get("restorations", []) + fields.get("changes", []):
        if "replace" in edit:
            old, new = edit["replace"]
            assert old in text, f"{old!r} is not in the text it restores"
            text = text.replace(old, new)
    for name in fields.get("restore", []):
        for edit in shared[name]:
            text = text.replace(*edit["replace"])
    return text


def run_form(fields: dict, start: str | None, shared: dict) -> str | None:
    """The text that runs: ``query`` as written, or ``start`` edited; ``restore`` applies to both."""
    if "query" in fields:
        assert all("replace" not in e for e in fields.get("restorations", [])), \
            "a case that writes its query out states its restorations in prose"
        return edited(fields["query"], {"restore": fields.get("restore", [])}, shared)
    return None if start is None else edited(start, fields, shared)


def load_cases(names: Sequence[str] = ("paper", "tutorial")) -> list[Case]:
    cases = []
    for name in names:
        with open(CASES / f"{name}.toml", "rb") as f:
            doc = tomllib.load(f)
        shared = doc.get("shared", {})
        ranges = {k: closes(r["from"], r["to"], r["every"]) for k, r in doc.get("ranges", {}).items()}
        raw = {c["id"]: c for c in doc["case"]}
        assert len(raw) == len(doc["case"]), f"{name}.toml: two cases share an id"
        resolved: dict[str, Case] = {}

        def resolve(case_id: str) -> Case:
            if case_id in resolved:
                return resolved[case_id]
            own = raw[case_id]
            if "base" in own:
                base = resolve(own["base"])
                fields = {k: base.fields[k] for k in INHERITED if k in base.fields} | own
                start = base.printed if own.get("base_form") == "printed" else base.query
                printed = None
            else:
                fields, printed = dict(own), own.get("printed")
                start = printed
            if "rdflib" in fields:
                fields["rdflib"] = dict(fields["rdflib"], query=run_form(fields["rdflib"], fields["rdflib"]["printed"],
                                                                         shared))
            resolved[case_id] = Case(case_id, name, printed, run_form(fields, start, shared), fields, ranges)
            return resolved[case_id]

        cases += [resolve(case_id) for case_id in raw]
    return cases
