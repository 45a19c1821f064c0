"""Raw source formats a stream's landing directory accepts besides RDF stream files.

A stream's ``format`` in ``queries/streams.toml`` names one of ``RAW_FORMATS`` (None: TriG or
N-Quads only): ``citybench`` (CityBench's CSV ``.stream`` files, every file into the one stream),
``csv`` (any CSV, by the stream's ``[streams.<key>.mapping]``; ``csv_mapping``) or ``dart`` (raw
NDBC ``<station>.txt``). A raw file is mapped to a TriG stream file in the landing
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
    from rsp_jobs.ingest.citybench import MappingReport
    from rsp_jobs.ingest.csv_mapping import CsvMapping
    from rsp_jobs.ingest.rdf_stream import Rejection


@dataclass(frozen=True)
class RawFormat:
    suffixes: tuple[str, ...]  # lower-case file suffixes of raw files
    # "module:function(raw path, out path, stream=IRI[, mapping=CsvMapping]) -> MappingReport"
    mapper: str
    mapped: bool = False  # needs the stream's declared mapping (``csv_mapping``)


RAW_FORMATS = {
    "citybench": RawFormat((".stream", ".csv"), "rsp_jobs.ingest.citybench:write_stream_trig"),
    "csv": RawFormat((".csv",), "rsp_jobs.ingest.csv_mapping:write_csv_trig", mapped=True),
    "dart": RawFormat((".txt",), "rsp_jobs.ingest.dart:write_station_trig"),
}
# what ``rsp ingest --format`` takes: the raw formats, and the stream files loaded as they are
STREAM_FORMATS = {"trig": (".trig",), "nquads": (".nq", ".nquads")}
MAPPED_DIR = "mapped"


def check_format(name: str | None, where: str) -> str | None:
    if name is not None and name not in RAW_FORMATS:
        raise InputError(
            f"{where}: format must be one of {', '.join(sorted(RAW_FORMATS))}, got {name!r}"
        )
    return name


def raw_suffixes(name: str | None) -> tuple[str, ...]:
    return RAW_FORMATS[name].suffixes if name else ()


def guess_format(path: Path) -> str | None:
    """The format a file's suffix names without doubt: ``trig``, ``nquads`` or ``citybench``
    (``.stream``); None when it could be several (``.csv``, ``.txt``)."""
    suffix = path.suffix.lower()
    by_suffix = {s: name for name, ss in STREAM_FORMATS.items() for s in ss}
    by_suffix[".stream"] = "citybench"
    return by_suffix.get(suffix)


def to_stream_file(
    path: Path,
    name: str | None,
    stream: str,
    mapping: CsvMapping | None = None,
    out_dir: Path | None = None,
) -> tuple[Path, list[Rejection]]:
    """``path`` itself when it is a stream file; a raw file of format ``name`` mapped to
    ``<out_dir>/<its stem>.trig`` (default ``<its folder>/mapped/``; by ``mapping`` for a format
    that needs one), with the mapping's rejections."""
    if name is None or path.suffix.lower() not in raw_suffixes(name):
        return path, []
    out, report = map_raw(path, name, stream, mapping, out_dir or path.parent / MAPPED_DIR)
    return out, list(report.rejected)


def map_raw(
    path: Path, name: str, stream: str, mapping: CsvMapping | None, out_dir: Path
) -> tuple[Path, MappingReport]:
    """A raw file of format ``name`` mapped to ``<out_dir>/<its stem>.trig``, and its report."""
    raw = RAW_FORMATS[name]
    module, function = raw.mapper.split(":")
    out = out_dir / f"{path.stem}.trig"
    options = {"mapping": mapping} if raw.mapped else {}
    report = getattr(importlib.import_module(module), function)(path, out, stream=stream, **options)
    return out, report
