"""Running a printed C-SPARQL example the way a user would: its stream files read into a fresh
lake (``rsp evaluate``'s loading), the query text compiled and evaluated, the answer per window
as plain values to compare with the one worked out by hand."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest.lake import Lake, load_files

DATA = Path(__file__).with_name("data")
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
