"""Ingest of landing files: stream files dropped in ``<RSP_HOME>/landing/<stream key>/`` go to
the lake and the store, once each.

Per file: parse (malformed lines and frames are rejected and counted; a file that cannot be
read at all, such as binary junk or text that is not UTF-8, is moved to ``rejected/`` with a
``.reason`` file beside it), run the input quality suite (a failing file is quarantined whole
and moved to ``rejected/`` the same way; the run fails naming the failed expectations), apply
the stream's late-data policy, then write lake and store and record the file as loaded, in one
store transaction. A file whose content was loaded before is skipped, whatever its name. Input
triples = accepted + quarantined, always. A loaded or skipped file then leaves the landing
directory for ``loaded/`` (or is deleted: ``RSP_LANDING_LOADED``), so no run hashes it twice;
``loaded/`` and ``mapped/`` keep files for ``RSP_LOADED_RETENTION`` (default 30 days).

A stream with a raw ``format`` (``queries/streams.toml``; ``rsp_jobs.ingest.sources``) also takes
raw files (DART ``.txt``): each is mapped to ``mapped/<stem>.trig`` in its landing directory,
which is then loaded as above on behalf of the raw file (its checksum says whether it was loaded,
the ingest activity used it). The rows the mapping rejected are quarantined with the parser's
rejections, each raw line counted as one quarantined input, like a malformed N-Quads line.

Only complete files are taken (docs/operations/landing.md). A producer should write a file under
a temporary name (a name starting with ``.``, or ending in ``.part`` or ``.tmp``, which are never
loaded) and rename it when done, as ``drop`` does; for producers that copy a file in place, a
file is taken only once it has not been modified for ``RSP_LANDING_QUIET`` (default 10 s), and
a file that changes while it is read (its size, modification time, inode or SHA-256 differ after
the read from before it) is not loaded nor marked loaded: its store transaction rolls back, its
lake parts are removed, and it is left for the next run, saying so in the log.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import func, insert, select, update

from rsp_jobs import settings
from rsp_jobs.errors import InputError, RspError
from rsp_jobs.ingest import sources
from rsp_jobs.ingest.lake import project_lake as lake
from rsp_jobs.ingest.rdf_stream import FORMATS, merge_known_frames, read_stream_file
from rsp_jobs.orchestrate import late, registry
from rsp_jobs.orchestrate.registry import StreamConfig
from rsp_jobs.store import db
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.frames import known_frames, register_stream
from rsp_jobs.store.models import IngestedFile, Stream, table_of
from rsp_jobs.store.provenance import file_checksum, record_ingest
from rsp_jobs.times import EPOCH, parse_timedelta, us_to_ms

log = logging.getLogger("rsp.ingest")
SHOWN_REJECTIONS = 20  # rejected lines named one by one in the log; the rest are counted

FUTURE_SKEW = timedelta(
    minutes=5
)  # event times later than the load time by more than this are wrong


@dataclass
class FileReport:
    path: str
    # loaded, skipped (already loaded), rejected (unreadable, or failed its quality checks),
    # waiting (still being written, or changed while it was read: left for the next run)
    status: str
    frames: int = 0
    triples: int = 0  # distinct triples of its frames
    quarantined: int = 0
    duplicates: int = 0  # statements of a triple its frame already held (read = triples + duplicates + quarantined)
    late_frames: int = 0
    late_dropped: int = 0
    watermark: str | None = None
    mapped: str | None = None  # the TriG file a raw file was mapped to
    reason: str | None = None  # why a rejected file was rejected (also in rejected/<name>.reason)
    activity: str | None = None  # the ingest activity of a loaded file


@dataclass
class LandingReport:
    stream: str
    files: list[FileReport]

    @property
    def loaded(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "loaded"]

    def as_dict(self) -> dict:
        return {
            "stream": self.stream,
            "files": [asdict(f) for f in self.files],
            "loaded": len(self.loaded),
            "triples": sum(f.triples for f in self.loaded),
            "quarantined": sum(f.quarantined for f in self.files),
            "late_frames": sum(f.late_frames for f in self.files),
            "watermark": max((f.watermark for f in self.loaded if f.watermark), default=None),
        }


def drop(path: Path, config: StreamConfig, name: str | None = None) -> Path:
    """Put a copy of ``path`` in the stream's landing folder the way a producer should: written
    under a name the ingest ignores, then renamed, so that no run loads half a file."""
    config.landing_dir.mkdir(parents=True, exist_ok=True)
    target = config.landing_dir / (name or path.name)
    partial = target.with_name(f".{target.name}.part")
    shutil.copyfile(path, partial)
    return partial.replace(target)


def loadable_suffixes(config: StreamConfig) -> list[str]:
    """The file suffixes the stream's ingest loads: the RDF formats, and its raw format's."""
    return sorted({*FORMATS, *sources.raw_suffixes(config.format)})


def landing_files(config: StreamConfig) -> list[Path]:
    """The stream's landing files, complete or still being written (a run that waits for its
    inputs counts both as coming)."""
    config.landing_dir.mkdir(parents=True, exist_ok=True)
    return candidate_files(config.landing_dir, loadable_suffixes(config))


def candidate_files(folder: Path, suffixes: Sequence[str]) -> list[Path]:
    """The files in ``folder`` with a loadable suffix, oldest name first; a name starting with
    ``.`` is a file being written under a temporary name."""
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith(".")
    )


def landing_quiet() -> float:
    """How long (seconds) a landing file must be left unmodified before it is taken
    (``RSP_LANDING_QUIET``, a duration such as ``10s``; ``0`` takes files at once)."""
    text = os.environ.get("RSP_LANDING_QUIET", "10s").strip()
    try:
        return (
            float(text)
            if text.replace(".", "", 1).isdigit()
            else parse_timedelta(text).total_seconds()
        )
    except ValueError as exc:
        raise InputError(f"RSP_LANDING_QUIET: {exc}") from None


def settled(path: Path, quiet_seconds: float) -> bool:
    """Whether ``path`` has been left unmodified for ``quiet_seconds``: a producer copying a file
    in pieces keeps moving its modification time."""
    try:
        return time.time() - path.stat().st_mtime >= quiet_seconds
    except FileNotFoundError:  # renamed or removed since it was listed
        return False


class Snapshot(NamedTuple):
    """What a file looked like: if any of it differs after a read, the file changed meanwhile."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> Snapshot:
        st = path.stat()
        return cls(st.st_size, st.st_mtime_ns, st.st_ino)


class ChangedWhileRead(Exception):
    """A landing file changed while it was read; it is left for the next run."""


def ingest_landing(stream_iri: str, store_url: str | None = None) -> LandingReport:
    """Load every new complete file of the stream's landing directory, oldest name first. A
    file still being written, or changed while it was read, is left for the next run. A file
    that cannot be read or fails its quality checks is moved to ``rejected/`` with its reason,
    and the first such failure is raised after the rest were loaded: one bad file never jams a
    stream."""
    from rsp_jobs.quality.gate import QualityGateError

    config = registry.stream_config(stream_iri)
    prune(config)
    quiet = landing_quiet()
    files: list[Path] = []
    writing: list[Path] = []
    for path in landing_files(config):
        (files if settled(path, quiet) else writing).append(path)
    if files:
        db.upgrade(store_url)
    queries, _ = registry.discover()  # once: which queries each file may be late for
    reports: list[FileReport] = []
    failures: list[RspError] = []
    log.info("<%s>: %d new file(s) in %s", stream_iri, len(files), config.landing_dir)
    for path in writing:
        log.info(
            "%s: modified less than %g s ago, still being written: left for the next run",
            path.name,
            quiet,
        )
        reports.append(FileReport(str(path), "waiting", reason="still being written"))
    for path in files:
        try:
            seen = Snapshot.of(path)
            reports.append(ingest_file(path, config, store_url, queries, seen))
            settle(path, config, seen)
        except ChangedWhileRead as exc:
            log.warning("%s: %s; not loaded, left for the next run", path.name, exc)
            reports.append(FileReport(str(path), "waiting", reason=str(exc)))
        except QualityGateError as exc:
            reports.append(
                FileReport(
                    str(path), "rejected", quarantined=exc.outcome.quarantined_rows, reason=str(exc)
                )
            )
            failures.append(exc)
        except InputError as exc:  # unreadable: not UTF-8, not the format its name says
            target = reject(path, config, str(exc))
            reports.append(FileReport(str(path), "rejected", reason=str(exc)))
            log.warning("%s: rejected, moved to %s: %s", path.name, target, exc)
            failures.append(exc)
    if failures:
        raise failures[0]
    return LandingReport(stream_iri, reports)


def quarantined_by_run(
    report: dict, run_id: str | None, store_url: str | None = None, shown: int = 20
) -> str | None:
    """What an ingest run quarantined, for its ``quarantined_input`` task: None when its files
    had nothing rejected; else a message naming the stream, the counts and the first ``shown``
    parts with file, line and reason, and the command that lists them all."""
    if not report.get("quarantined"):
        return None
    from rsp_jobs.store.quarantine import quarantined

    stream = report["stream"]
    parts, total = quarantined(db.engine(store_url), stream, run=run_id, limit=shown)
    lines = [
        f"<{stream}>: {report['quarantined']} input triple(s) quarantined by this run "
        f"({total} rejected part(s)); the rest of the input was loaded"
    ]
    lines += [f"  #{p.id} {p.where}: {p.reason}" for p in parts]
    if total > len(parts):
        lines.append(f"  ... and {total - len(parts)} more")
    lines.append(f"rsp quarantine --stream {stream} lists them; rsp quarantine ID shows one")
    return "\n".join(lines)


def _require_unchanged(
    path: Path, seen: Snapshot | None, checksum: str, parsed: str | None
) -> None:
    """Raise ChangedWhileRead unless ``path`` is as it was before it was read (``seen``), and
    what was parsed (SHA-256 ``parsed``; None: a raw file, parsed after mapping) is what was
    hashed as the file's checksum."""
    now = Snapshot.of(path) if path.exists() else None
    if seen is not None and now != seen:
        raise ChangedWhileRead(
            f"changed while it was read (size {seen.size} -> {now.size if now else 'gone'} bytes)"
        )
    if parsed is not None and parsed != checksum:
        raise ChangedWhileRead(
            "changed while it was read (the bytes parsed are not the bytes hashed)"
        )


def ingest_file(
    path: Path,
    config: StreamConfig,
    store_url: str | None = None,
    queries: list[registry.RegisteredQuery] | None = None,
    seen: Snapshot | None = None,
    landed: bool = True,
) -> FileReport:
    """Load one stream file into an upgraded store (see the module doc); ``queries``: the
    registered queries (default: discovered now); ``seen``: the file before anything read it
    (default: now); ``landed``: the file is in the landing folder, which a file failing its
    quality checks leaves for ``rejected/`` (a file loaded from elsewhere stays where it is, and
    its raw mapping goes to the landing folder's ``mapped/``). Returns what happened to the file;
    raises ChangedWhileRead, having written nothing, when the file changed while it was read."""
    from rsp_jobs.quality import gate

    engine = db.engine(store_url)
    seen = seen or Snapshot.of(path)
    checksum = file_checksum(path)
    if _already_loaded(engine, config.iri, checksum):
        log.info("%s: skipped, loaded before (same SHA-256)", path.name)
        return FileReport(str(path), "skipped")
    started, clock = datetime.now(UTC), time.perf_counter()
    stream_file, mapping_rejections = sources.to_stream_file(
        path,
        config.format,
        config.iri,
        config.mapping,
        None if landed else config.landing_dir / sources.MAPPED_DIR,
    )
    batch = read_stream_file(stream_file, config.iri, order=_files_loaded(engine, config.iri))
    # a time the stream already has is one frame: this file's parts at it merge into that frame
    merge_known_frames(batch, known_frames(engine, config.iri, [p.ts for p in batch.parts]))
    batch.rejections[:0] = mapping_rejections
    read_triples = batch.read_triples
    outcome = gate.check_input_batch(
        gate.lake_rows(batch.elements),
        stream=config.iri,
        source=str(path),
        interval=(EPOCH, started + FUTURE_SKEW),
        engine=engine,
        batch_id=f"{config.key}/{checksum[:16]}",
        background=registry.background_paths(),
    )
    if not outcome.success and landed:
        target = reject(path, config, outcome.summary())
        log.warning(
            "%s: failed its quality checks, moved to %s: %s", path.name, target, outcome.summary()
        )
    gate.require(outcome)
    if queries is None:
        queries, _ = registry.discover()
    batch_id, written = checksum[:16], False
    try:
        with write_transaction(engine) as conn:
            stream_id = _configure_stream(conn, config)
            late_frames = late.find_late(conn, batch, queries)
            dropped = late.apply_policy(
                conn, batch, late_frames, config.late_policy, stream_id, str(path)
            )
            _report, activity = record_ingest(conn, batch, str(path), started, checksum)
            conn.execute(
                insert(table_of(IngestedFile)).values(
                    stream_id=stream_id,
                    path=str(path),
                    checksum=checksum,
                    frames=batch.frames,
                    triples=len(batch.elements),
                    activity_iri=activity,
                )
            )
            watermark = conn.scalar(select(Stream.watermark).where(Stream.id == stream_id))
            written = True
            # inside: a failed lake write rolls the store back
            lake().write(batch, batch_id=batch_id)
            # last, just before the commit: a file still growing is not recorded as loaded
            _require_unchanged(path, seen, checksum, batch.sha256 if stream_file == path else None)
    except BaseException:
        if written:  # the store rolled back: so does the lake
            lake().discard(config.iri, batch_id)
        raise
    quarantined = batch.rejected_triples
    assert batch.read_triples == read_triples, "ingest lost triples"
    _log_loaded(
        path, batch, outcome, watermark, len(late_frames), dropped, time.perf_counter() - clock
    )
    return FileReport(
        str(path),
        "loaded",
        batch.frames,
        len(batch.elements),
        quarantined,
        sum(batch.duplicates.values()),
        len({f.frame for f in late_frames}),
        dropped,
        watermark.isoformat() if watermark else None,
        str(stream_file) if stream_file != path else None,
        activity=activity,
    )


def _log_loaded(
    path: Path, batch, outcome, watermark, late_frames: int, dropped: int, seconds: float
) -> None:
    """What loading one file did, for the task log: counts, each rejected line with its reason
    (the first ``SHOWN_REJECTIONS``) and where the rejected lines are kept."""
    log.info(
        "%s: loaded %d frames, %d triples in %.1f s; watermark %s; quality: %s",
        path.name,
        batch.frames,
        len(batch.elements),
        seconds,
        watermark.isoformat() if watermark else "-",
        outcome.summary(),
    )
    if late_frames:
        log.info(
            "%s: %d late frame(s), %d dropped by the stream's late policy",
            path.name,
            late_frames,
            dropped,
        )
    if batch.rejections:
        log.info(
            "%s: %d triple(s) in %d place(s) rejected, kept in the lake's quarantine (%s) and the store's "
            "quarantine table:",
            path.name,
            batch.rejected_triples,
            len(batch.rejections),
            lake().quarantine_dir,
        )
        for rejection in batch.rejections[:SHOWN_REJECTIONS]:
            log.info("  %s", rejection)
        if len(batch.rejections) > SHOWN_REJECTIONS:
            log.info("  ... and %d more", len(batch.rejections) - SHOWN_REJECTIONS)


def settle(path: Path, config: StreamConfig, seen: Snapshot | None = None) -> None:
    """A loaded (or already loaded) landing file leaves the landing directory, so that no later
    run hashes it again: moved to ``loaded/`` or deleted (``RSP_LANDING_LOADED``). One that
    differs from ``seen`` (what was loaded) stays, for the next run to load what it now holds."""
    if seen is not None and path.exists() and Snapshot.of(path) != seen:
        log.warning("%s: changed after it was loaded; left for the next run", path.name)
        return
    if settings.landing_after_load() == "delete":
        path.unlink(missing_ok=True)
    else:
        _move(path, config.landing_dir / "loaded")


def prune(config: StreamConfig) -> None:
    """Loaded files and mapped raw files older than ``RSP_LOADED_RETENTION`` (default 30 days)
    are deleted; rejected files stay until someone looks at them."""
    keep = settings.retention("RSP_LOADED_RETENTION", "P30D")
    if keep is None:
        return
    oldest = (datetime.now(UTC) - keep).timestamp()
    for folder in (config.landing_dir / "loaded", config.landing_dir / sources.MAPPED_DIR):
        for old in folder.glob("*") if folder.is_dir() else ():
            if old.is_file() and old.stat().st_mtime < oldest:
                old.unlink(missing_ok=True)


def _move(path: Path, folder: Path) -> Path:
    """Move ``path`` into ``folder``; a name already there gets a numbered suffix rather than
    replacing the earlier file."""
    folder.mkdir(exist_ok=True)
    target, n = folder / path.name, 1
    while target.exists():
        target, n = folder / f"{path.stem}.{n}{path.suffix}", n + 1
    shutil.move(str(path), target)
    return target


def reject(path: Path, config: StreamConfig, reason: str) -> Path:
    """Move a landing file to ``rejected/`` with ``<name>.reason`` beside it; a name already
    there gets a numbered suffix rather than replacing the earlier file."""
    target = _move(path, config.landing_dir / "rejected")
    target.with_name(target.name + ".reason").write_text(reason + "\n", encoding="utf-8")
    return target


def _files_loaded(engine, stream_iri: str) -> int:
    """How many files of the stream were loaded before: the next file's delivery order."""
    with engine.connect() as conn:
        return conn.scalar(
            select(func.count(IngestedFile.id))
            .join(Stream, Stream.id == IngestedFile.stream_id)
            .where(Stream.iri == stream_iri)
        )


def _already_loaded(engine, stream_iri: str, checksum: str) -> bool:
    with engine.connect() as conn:
        return (
            conn.scalar(
                select(IngestedFile.id)
                .join(Stream, Stream.id == IngestedFile.stream_id)
                .where(Stream.iri == stream_iri, IngestedFile.checksum == checksum)
            )
            is not None
        )


def _configure_stream(conn, config: StreamConfig) -> int:
    """Register the stream with the catalog's lateness and policy (the store is the record)."""
    stream_id = register_stream(conn, config.iri)
    conn.execute(
        update(Stream)
        .where(Stream.id == stream_id)
        .values(
            allowed_lateness_ms=us_to_ms(config.allowed_lateness_us), late_policy=config.late_policy
        )
    )
    return stream_id
