"""Generated streams written the way real ones arrive: several graphs at one timestamp, uneven
gaps, a stream split over files (a timestamp may straddle two of them), in each serialization
the reader takes: TriG frames, N-Quads frames, and C-SPARQL's N-Quads with the timestamp as
context (§3.1). The engine reads these files; the reference reads the element list they were
written from (``rsp_jobs.bench.reference``), so both see the same stream."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from itertools import groupby
from pathlib import Path
from typing import Sequence

from hypothesis import strategies as st

from rsp_jobs.bench.reference import Elem
from rsp_jobs.times import datetime_lexical

AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DATETIME = "<http://www.w3.org/2001/XMLSchema#dateTime>"
FORMATS = ("trig", "nquads", "timestamped")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Layout:
    """How a stream is delivered: its files' format and how many files it is split into."""

    format: str = "nquads"
    files: int = 1


layouts = st.builds(Layout, st.sampled_from(FORMATS), st.integers(1, 3))


def in_delivery_order(elements: Sequence[Elem]) -> list[Elem]:
    """The elements as a stream delivers them: by time, graphs in the order given, each with
    its position (``pos``) and graph (``graph``, default one per stream and time)."""
    ordered = sorted(enumerate(elements), key=lambda item: (item[1].stream, item[1].ts_ms, item[0]))
    out = []
    for pos, (_, e) in enumerate(ordered):
        out.append(replace(e, pos=pos, graph=e.graph or f"{e.stream}/f{e.ts_ms}"))
    return out


def write_stream_files(elements: Sequence[Elem], folder: Path,
                       layouts: dict[str, Layout] | None = None) -> list[tuple[str, Path]]:
    """Write each stream's elements (``in_delivery_order``) as its layout says; returns the
    (stream IRI, path) pairs in delivery order. The split falls between graphs, so a timestamp
    whose graphs are in two chunks is brought by two files."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number, (stream, mine) in enumerate(groupby(in_delivery_order(elements), key=lambda e: e.stream)):
        mine = list(mine)
        layout = (layouts or {}).get(stream, Layout())
        graphs = [list(g) for _, g in groupby(mine, key=lambda e: (e.ts_ms, e.graph))]
        size = -(-len(graphs) // layout.files)
        for part in range(layout.files):
            chunk = graphs[part * size:(part + 1) * size]
            if not chunk:
                continue
            suffix = "trig" if layout.format == "trig" else "nq"
            path = folder / f"s{number}-{part}.{suffix}"
            path.write_text(_serialize(chunk, layout.format), encoding="utf-8")
            files.append((stream, path))
    return files


def _serialize(graphs: list[list[Elem]], fmt: str) -> str:
    lines = []
    for graph in graphs:
        stamp = f'"{datetime_lexical(EPOCH + timedelta(milliseconds=graph[0].ts_ms))}"^^{DATETIME}'
        name = f"<{graph[0].graph}>"
        if fmt == "timestamped":
            lines += [f"{e.s} {e.p} {e.o} {stamp} ." for e in graph]
        elif fmt == "nquads":
            lines.append(f"{name} {AT} {stamp} .")
            lines += [f"{e.s} {e.p} {e.o} {name} ." for e in graph]
        else:
            lines.append(f"{name} {AT} {stamp} .")
            lines.append(f"{name} {{ " + " ".join(f"{e.s} {e.p} {e.o} ." for e in graph) + " }")
    return "\n".join(lines) + "\n"
