"""``rsp ingest``: raw data of one declared stream, into the lake and the store at once or into
the stream's landing folder for a deployment's ingest DAG (``docs/ingest.md``).

The file's kind is ``--format`` (``citybench``, ``dart``, ``csv``, ``trig``, ``nquads``), else
the stream's declared ``format`` when the suffix is one of its, else what the suffix says
(``.trig``, ``.nq``, ``.stream``; ``.csv`` with ``--mapping``). Mapping is done by the mappers of ``rsp_jobs.ingest.sources``
and loading by ``ingest.ingest_file``, as the ingest DAG does, so the rows a mapping rejects
are quarantined with the parser's rejections.

``to="landing"`` puts a file in the landing folder the way a producer should (``ingest.drop``:
written under a name the ingest ignores, then renamed). A raw file the landing folder takes
itself (the stream's declared format, its declared mapping) lands as it is, so that the
deployment maps it and quarantines its rejected rows; it is mapped here first all the same, so
that bad input is reported now. Any other raw file lands as the TriG it maps to: the rows its
mapping rejected are reported here, and are not in the deployment's quarantine.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rsp_jobs.errors import InputError
from rsp_jobs.ingest import sources
from rsp_jobs.ingest.csv_mapping import CsvMapping, load_mapping
from rsp_jobs.ingest.rdf_stream import Rejection
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import FileReport, drop, ingest_file
from rsp_jobs.orchestrate.registry import StreamConfig
from rsp_jobs.store import db

KINDS = (*sorted(sources.RAW_FORMATS), *sources.STREAM_FORMATS)
DESTINATIONS = ("lake", "landing")


@dataclass
class Ingested:
    """What ``rsp ingest`` did with one file."""

    source: Path
    kind: str
    report: FileReport | None = None  # to the lake: what the load did
    landed: Path | None = None  # to the landing folder: the file put there
    frames: int | None = None  # to the landing folder: the frames mapped (None: not mapped here)
    # to the landing folder: the rows the mapping rejected, and whether the deployment's
    # ingest quarantines them (it maps the raw file itself) or they are only reported here
    rejected: list[Rejection] = field(default_factory=list)
    quarantined_there: bool = False


def ingest_sources(
    stream: str,
    paths: Sequence[Path],
    kind: str | None = None,
    to: str = "lake",
    mapping_path: Path | None = None,
    store_url: str | None = None,
) -> tuple[StreamConfig, list[Ingested]]:
    """Ingest ``paths`` into the declared ``stream`` (its key or IRI); every file is checked
    before any is loaded, so that a wrong name or kind loads nothing."""
    if to not in DESTINATIONS:
        raise InputError(f"--to: one of {', '.join(DESTINATIONS)}, got {to!r}")
    config = registry.declared(stream)
    mapping = load_mapping(mapping_path) if mapping_path is not None else config.mapping
    kinds = [_kind_of(path, kind, config, mapping) for path in paths]
    if to == "landing":
        return config, [
            _land(path, k, config, mapping, mapping_path is None) for path, k in zip(paths, kinds)
        ]
    db.upgrade(store_url)
    queries, _ = registry.discover()
    done = []
    for path, k in zip(paths, kinds):
        as_kind = replace(config, format=k if k in sources.RAW_FORMATS else None, mapping=mapping)
        report = ingest_file(path, as_kind, store_url, queries, landed=False)
        done.append(Ingested(path, k, report=report))
    return config, done


def _kind_of(path: Path, kind: str | None, config: StreamConfig, mapping: CsvMapping | None) -> str:
    """The kind of ``path`` (module doc), checked against its name and the stream."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if kind is None:
        declared = config.format if suffix in sources.raw_suffixes(config.format) else None
        kind = declared or sources.guess_format(path)
        if kind is None and suffix == ".csv" and mapping is not None:  # --mapping says it
            kind = "csv"
    if kind is None:
        raise InputError(
            f"{path}: cannot tell its format from its name; give --format ({', '.join(KINDS)})"
        )
    if kind not in KINDS:
        raise InputError(f"--format: one of {', '.join(KINDS)}, got {kind!r}")
    suffixes = (
        sources.raw_suffixes(kind) if kind in sources.RAW_FORMATS else sources.STREAM_FORMATS[kind]
    )
    if suffix not in suffixes:
        raise InputError(f"{path}: a {kind} file's name ends in {' or '.join(suffixes)}")
    if kind == "csv" and mapping is None:
        raise InputError(
            f"{path}: a CSV file needs a mapping: declare [streams.{config.key}.mapping] in "
            f"{registry.catalog_path()} or give --mapping FILE (docs/ingest.md)"
        )
    return kind


def _land(
    path: Path, kind: str, config: StreamConfig, mapping: CsvMapping | None, declared: bool
) -> Ingested:
    if kind in sources.STREAM_FORMATS:
        return Ingested(path, kind, landed=drop(path, config, _free_name(config, path.name)))
    with tempfile.TemporaryDirectory(prefix="rsp-ingest-") as scratch:
        mapped, report = sources.map_raw(path, kind, config.iri, mapping, Path(scratch))
        done = Ingested(path, kind, frames=report.frames, rejected=list(report.rejected))
        if declared and kind == config.format:  # the landing folder maps it itself
            done.landed = drop(path, config, _free_name(config, path.name))
            done.quarantined_there = True
        else:
            done.landed = drop(mapped, config, _free_name(config, f"{path.stem}.trig"))
        return done


def _free_name(config: StreamConfig, name: str) -> str:
    """``name``, or ``<stem>.<n><suffix>`` when a file of that name waits in the landing folder
    already: a second drop must not replace a file not loaded yet."""
    folder, candidate, n = config.landing_dir, Path(name), 1
    while (folder / candidate.name).exists():
        candidate = Path(f"{Path(name).stem}.{n}{Path(name).suffix}")
        n += 1
    return candidate.name
