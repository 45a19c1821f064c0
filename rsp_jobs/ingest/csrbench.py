"""CSRBench (Dell'Aglio et al., ISWC 2013) as an RSP stream and its published answers.

The benchmark ships its stream as Turtle files ``stream/data_NN.ttl``, graph NN stamped
NN seconds after t0 = 0; we write them as one N-Quads stream file, a frame per file.
"""

from __future__ import annotations

import json
from pathlib import Path

from rdflib import Graph

from rsp_jobs.errors import InputError
from rsp_jobs.results import WindowResult
from rsp_jobs.settings import data_dir
from rsp_jobs.terms import to_nt
from rsp_jobs.times import US_PER_S, datetime_lexical, from_us, us_to_ms

STREAM = "http://ex.org/streams/test"
QUERIES = ("q1", "q2", "q3", "q4", "q5", "q6", "q7")
_PROV_AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
_XSD_DATETIME = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def csrbench_dir() -> Path:
    path = data_dir() / "csrbench"
    if not path.is_dir():
        raise InputError(f"{path}: CSRBench data not found (set RSP_DATA_DIR)")
    return path


def query_path(name: str) -> Path:
    return csrbench_dir() / "queries" / f"{name}.rq"


def write_stream(out: Path) -> Path:
    """The 34 graphs as an N-Quads stream file (frame NN at NN s after the epoch)."""
    with out.open("w", encoding="utf-8") as f:
        for path in sorted((csrbench_dir() / "stream").glob("data_*.ttl")):
            number = int(path.stem.split("_")[1])
            frame = f"<{STREAM}/frame/{number:02d}>"
            moment = datetime_lexical(from_us(number * US_PER_S))
            f.write(f'{frame} {_PROV_AT} "{moment}"^^{_XSD_DATETIME} .\n')
            for s, p, o in Graph().parse(path, format="turtle"):
                f.write(f"{to_nt(s)} {to_nt(p)} {to_nt(o)} {frame} .\n")
    return out


def expected_answers(name: str) -> dict[int, set[tuple]]:
    """{window close ms: set of bindings}, each binding a sorted tuple of (var, value) with IRIs
    as strings and numbers as floats; the oracle's ``[{}]`` for an empty result becomes set()."""
    data = json.loads((csrbench_dir() / "expected" / "csparql_policy_t0_0.json").read_text())
    return {
        w["timestamp"]: {
            tuple(sorted((k, float(v) if isinstance(v, (int, float)) else v) for k, v in b.items()))
            for b in w["bindings"]
            if b
        }
        for w in data[name]
    }


def answers_of(windows: list[WindowResult]) -> dict[int, set[tuple]]:
    """Window results in the shape of ``expected_answers``."""

    def value(term: dict):
        return (
            float(term["value"])
            if "datatype" in term and term["type"] == "literal"
            else term["value"]
        )

    out = {}
    for w in windows:
        out[us_to_ms(w.close_us)] = {
            tuple(sorted((k, value(v)) for k, v in b.items())) for b in w.bindings
        }
    return out
