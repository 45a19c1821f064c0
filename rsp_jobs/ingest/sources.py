"""Raw source formats a stream's landing directory accepts besides RDF stream files.

A stream's ``format`` in ``queries/streams.toml`` names one of ``RAW_FORMATS`` (None: TriG or
N-Quads only, as before). A raw file is mapped to a TriG stream file in the landing
directory's ``mapped/`` folder, which then goes through the ordinary ingest; the rows the
mapping rejected are returned with it, so that they are quarantined and counted like the
parser's rejections. The mappers are imported only when a raw file is mapped.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rsp_jobs.errors import InputError

if TYPE_CHECKING:
    from rsp_jobs.ingest.rdf_stream import Rejection


@dataclass(frozen=True)
class RawFormat:
    suffixes: tuple[str, ...]  # lower-case file suffixes of raw files
    mapper: str  # "module:function(raw path, out path, stream=IRI) -> MappingReport"


RAW_FORMATS = {
    "dart": RawFormat((".txt",), "rsp_jobs.ingest.dart:write_station_trig"),
}
MAPPED_DIR = "mapped"


def check_format(name: str | None, where: str) -> str | None:
    if name is not None and name not in RAW_FORMATS:
        raise InputError(
            f"{where}: format must be one of {', '.join(sorted(RAW_FORMATS))}, got {name!r}"
        )
    return name


def raw_suffixes(name: str | None) -> tuple[str, ...]:
    return RAW_FORMATS[name].suffixes if name else ()


def to_stream_file(path: Path, name: str | None, stream: str) -> tuple[Path, list[Rejection]]:
    """``path`` itself when it is a stream file; a raw file of format ``name`` mapped to
    ``<its folder>/mapped/<its stem>.trig``, with the mapping's rejections."""
    if name is None or path.suffix.lower() not in raw_suffixes(name):
        return path, []
    module, function = RAW_FORMATS[name].mapper.split(":")
    out = path.parent / MAPPED_DIR / f"{path.stem}.trig"
    report = getattr(importlib.import_module(module), function)(path, out, stream=stream)
    return out, list(report.rejected)
