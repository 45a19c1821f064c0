"""Building stream files in the RSP data model for tests (TriG: one named graph per frame)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Sequence

from rdflib import Graph

from rsp_jobs.terms import to_nt

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
PROV_AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD_DATETIME = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def write_frames_nquads(frames: Iterable[tuple[str, datetime, Sequence[tuple[str, str, str]]]], out: Path) -> Path:
    """Frames as (frame IRI, time, triples as N-Triples text) → an N-Quads stream file."""
    with out.open("w", encoding="utf-8") as f:
        for frame, moment, triples in frames:
            f.write(f'<{frame}> {PROV_AT} "{iso(moment)}"^^{XSD_DATETIME} .\n')
            for s, p, o in triples:
                f.write(f"{s} {p} {o} <{frame}> .\n")
    return out


def csrbench_stream(data_dir: Path, out: Path) -> Path:
    """CSRBench's data_NN.ttl files as one stream: graph NN at NN seconds after the epoch."""
    frames = []
    for path in sorted((data_dir / "csrbench" / "stream").glob("data_*.ttl")):
        number = int(path.stem.split("_")[1])
        graph = Graph().parse(path, format="turtle")
        triples = [(to_nt(s), to_nt(p), to_nt(o)) for s, p, o in graph]
        frames.append((f"http://ex.org/streams/test/frame/{number:02d}", EPOCH + timedelta(seconds=number), triples))
    return write_frames_nquads(frames, out)
