"""The stream lake: every stream as Parquet, one row per triple, partitioned by stream and hour.

Writing happens on the driver with pyarrow (ingest batches are files that were parsed there);
reading happens in Spark and prunes to the partitions a run needs. A batch's part files are
named after the batch, so loading the same batch again replaces them instead of duplicating.

A part file appears whole or not at all: a batch is written under ``_writing-...`` at the lake's
root (pyarrow and Spark skip names that start with ``_``, and readers list only
``stream_key=*/hour=*``), and each finished file is moved into its partition with
``os.replace``, atomic within one file system. A write that fails (a full disk) removes what it
staged and leaves the batch's earlier parts as they were; a writer killed mid-way leaves a
staging folder the next write on the same host removes.

``seq`` is a triple's place in its stream as delivered: the file's place among the stream's
files (``StreamBatch.order``) times 2^32 plus the triple's position in the file. It orders the
triples of one time (C-SPARQL §3.1's positional order) for ``[TRIPLES n]`` windows. Files
written before ``seq`` existed read it as NULL (the schema is given when reading).

``h`` is a 64-bit hash of a triple's terms as written (``triple_hashes``), so that whether
months of a stream repeat a triple is told from one column of longs on the driver
(``LakeStatistics.repeats_by_hash``) rather than by a Spark job over the terms. Spark does not read it.
Files written before it existed have none, and their slices are checked by Spark as before.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.dataset as pads

from rsp_jobs.errors import StorageError
from rsp_jobs.ingest.rdf_stream import (
    Element,
    Rejection,
    StreamBatch,
    many_small_objects,
    merge_known_frames,
    read_stream_chunks,
)
from rsp_jobs.terms import RDF_TYPE_NT as RDF_TYPE
from rsp_jobs.times import to_us

SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("frame", pa.string()),
        ("s", pa.string()),
        ("p", pa.string()),
        ("o", pa.string()),
        ("o_num", pa.float64()),
        ("o_time", pa.timestamp("us", tz="UTC")),
        ("seq", pa.int64()),
        ("start", pa.timestamp("us", tz="UTC")),  # a derived event's interval start; NULL: ts
        ("h", pa.int64()),  # triple_hashes(s, p, o)
        ("stream_key", pa.string()),
        ("hour", pa.string()),
    ]
)


@dataclass(frozen=True)
class Vocabulary:
    """The predicates a slice of the lake holds and the classes its ``rdf:type`` triples name
    (N-Triples terms): a triple pattern that names another predicate, or ``rdf:type`` with
    another class, matches nothing there (``LakeStatistics.vocabulary``)."""

    predicates: frozenset[str]
    classes: frozenset[str]

    def may_match(self, predicate: str | None, obj: str | None) -> bool:
        """Whether a pattern with these constants (None: a variable) may match a triple here."""
        if predicate is None:
            return bool(self.predicates)
        return predicate in self.predicates and (
            predicate != RDF_TYPE or obj is None or obj in self.classes
        )

    def __or__(self, other: Vocabulary) -> Vocabulary:
        return Vocabulary(self.predicates | other.predicates, self.classes | other.classes)

    @classmethod
    def of(cls, table: pa.Table) -> Vocabulary:
        """The vocabulary of the lake's rows ``table`` (its ``p`` and ``o`` columns)."""
        import pyarrow.compute as pc

        p = table.column("p").cast(pa.string())
        types = table.column("o").filter(pc.equal(p, RDF_TYPE)).cast(pa.string())
        return cls(frozenset(pc.unique(p).to_pylist()), frozenset(pc.unique(types).to_pylist()))

    def to_json(self) -> bytes:
        return json.dumps(
            {"predicates": sorted(self.predicates), "classes": sorted(self.classes)}
        ).encode()

    @classmethod
    def from_json(cls, text: bytes) -> Vocabulary:
        data = json.loads(text)
        return cls(frozenset(data["predicates"]), frozenset(data["classes"]))


# A part file's footer holds its batch's Vocabulary (of all the batch's hours: a superset of
# the file's), so that a read's vocabulary is its footers', not its rows'.
VOCABULARY_KEY = b"rsp.vocabulary"
NO_WORDS = Vocabulary(frozenset(), frozenset())


PARTITIONING = pads.partitioning(
    pa.schema([("stream_key", pa.string()), ("hour", pa.string())]), flavor="hive"
)


def stream_key(stream_iri: str) -> str:
    """A partition-safe name for a stream: readable tail plus a hash of the whole IRI."""
    tail = re.sub(
        r"[^A-Za-z0-9]+", "_", stream_iri.rstrip("/#").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    )
    return f"{tail[-40:]}-{hashlib.sha1(stream_iri.encode()).hexdigest()[:10]}"


def hour_of(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H")


class Lake:
    """A lake rooted at a directory (``<home>/lake`` by default)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.quarantine_dir = self.root.parent / "quarantine"

    @many_small_objects()
    def write(self, batch: StreamBatch, batch_id: str | None = None) -> int:
        """Append a batch's elements (replacing an earlier load of the same batch id) and
        quarantine its rejections. Returns the number of rows written. A file that cannot be
        written is a ``StorageError``; the lake is then as it was before the call."""
        batch_id = (
            batch_id or hashlib.sha1(f"{batch.stream}|{batch.source}".encode()).hexdigest()[:16]
        )
        try:
            if batch.rejections:
                self._quarantine(batch.stream, batch_id, batch.rejections)
            earlier = set(self.parts_of(batch.stream, batch_id))
            rows, written = 0, []
            if batch.elements:
                table = self.table(batch.stream, batch.elements, batch.order)
                table = table.replace_schema_metadata(
                    {VOCABULARY_KEY: Vocabulary.of(table).to_json()}
                )
                written, rows = self._write_parts(table, batch_id), table.num_rows
            for old in earlier - set(written):
                # the batch replaces its earlier load, wherever its hours were
                old.unlink(missing_ok=True)
            return rows
        except OSError as exc:
            raise StorageError(f"cannot write the lake {self.root}: {_os_reason(exc)}") from exc

    def parts_of(self, stream: str, batch_id: str) -> list[Path]:
        """The part files a batch of ``stream`` with this id wrote, in every hour."""
        return sorted(
            (self.root / f"stream_key={stream_key(stream)}").glob(
                f"hour=*/part-{batch_id}-*.parquet"
            )
        )

    def discard(self, stream: str, batch_id: str, chunks: bool = False) -> None:
        """Remove a batch's part files: a load whose store transaction did not commit; with
        ``chunks``, also those of the batches ``<batch_id>c<k>`` a large file was loaded in."""
        parts = self.parts_of(stream, batch_id)
        if chunks:
            parts += (self.root / f"stream_key={stream_key(stream)}").glob(
                f"hour=*/part-{batch_id}c*-*.parquet"
            )
        for part in parts:
            part.unlink(missing_ok=True)

    def _write_parts(self, table: pa.Table, batch_id: str) -> list[Path]:
        """Write ``table``'s partitions aside, then move each finished file into place."""
        _remove_abandoned_stages(self.root)
        stage = (
            self.root / f"{STAGE_PREFIX}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        )
        try:
            pads.write_dataset(
                table,
                stage,
                format="parquet",
                partitioning=PARTITIONING,
                basename_template=f"part-{batch_id}-{{i}}.parquet",
                existing_data_behavior="overwrite_or_ignore",
            )
            placed = []
            for staged in sorted(stage.glob("stream_key=*/hour=*/*.parquet")):
                target = self.root / staged.relative_to(stage)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, target)
                placed.append(target)
            return placed
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def table(self, stream: str, elements: Iterable[Element], order: int = 0) -> pa.Table:
        """Elements as the lake's rows (Arrow), partition columns included; ``order``: the
        batch's place among the stream's files (see the module doc on ``seq``)."""
        elements = list(elements)
        columns: dict[str, Any] = {
            name: list(map(attrgetter(name), elements))
            for name in ("stream", "ts", "frame", "s", "p", "o", "o_num", "o_time", "start")
        }
        columns["seq"] = [(order << 32) + e.pos for e in elements]
        columns["h"] = triple_hashes(columns["s"], columns["p"], columns["o"]).view("int64")
        hours = {ts: hour_of(ts) for ts in set(columns["ts"])}
        columns["hour"] = list(map(hours.__getitem__, columns["ts"]))
        columns["stream_key"] = [stream_key(stream)] * len(elements)
        pool = _memory_pool()
        return pa.table(
            {
                f.name: _timestamps(columns[f.name], pool)
                if pa.types.is_timestamp(f.type)
                else pa.array(columns[f.name], f.type, memory_pool=pool)
                for f in SCHEMA
            },
            schema=SCHEMA,
        )

    def _quarantine(self, stream: str, batch_id: str, rejections: list[Rejection]) -> Path:
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        path = self.quarantine_dir / f"{stream_key(stream)}-{batch_id}.jsonl"
        # replaced whole, never left half-written
        aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with aside.open("w", encoding="utf-8") as out:
                for r in rejections:
                    out.write(
                        json.dumps(
                            {
                                "stream": stream,
                                "file": r.file,
                                "line": r.line,
                                "reason": r.reason,
                                "triples": r.triples,
                                "text": r.text,
                            }
                        )
                        + "\n"
                    )
            os.replace(aside, path)
        finally:
            aside.unlink(missing_ok=True)
        return path

    def read(
        self,
        spark,
        streams: Iterable[str],
        start: datetime | None = None,
        end: datetime | None = None,
    ):
        """The elements of ``streams`` with ``start <= ts < end`` as a Spark DataFrame, reading
        only the partitions of those streams and hours."""
        from pyspark.sql import functions as F

        keys = {stream_key(s): s for s in streams}
        present = [k for k in keys if (self.root / f"stream_key={k}").is_dir()]
        if not present:
            return spark.createDataFrame([], _spark_schema())
        frame = (
            spark.read.schema(_spark_schema(partitions=True))
            .option("basePath", str(self.root))
            .parquet(*[str(self.root / f"stream_key={k}") for k in present])
        )
        frame = frame.where(F.col("stream_key").isin(present))
        if start is not None:
            frame = frame.where((F.col("hour") >= hour_of(start)) & (F.col("ts") >= F.lit(start)))
        if end is not None:
            frame = frame.where((F.col("hour") <= hour_of(end)) & (F.col("ts") < F.lit(end)))
        return frame.select(*COLUMNS)

    @staticmethod
    def within(frame, streams: Iterable[str], start: datetime | None, end: datetime | None):
        """The elements of ``frame`` (a ``read`` of a wider slice) that a ``read`` of ``streams``
        from ``start`` to ``end`` gives."""
        from pyspark.sql import functions as F

        frame = frame.where(F.col("stream").isin(list(dict.fromkeys(streams))))
        if start is not None:
            frame = frame.where(F.col("ts") >= F.lit(start))
        if end is not None:
            frame = frame.where(F.col("ts") < F.lit(end))
        return frame

    def parts(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> list[Path]:
        """The Parquet files of the partitions (stream x hour) a ``read`` of the span touches
        (what ``rsp_jobs.physical.statistics`` reads of a slice before Spark does)."""
        first, last = (None if t is None else f"hour={hour_of(t)}" for t in (start, end))
        return [
            part
            for key in sorted({stream_key(s) for s in streams})
            for hour in sorted((self.root / f"stream_key={key}").glob("hour=*"))
            if (first is None or hour.name >= first) and (last is None or hour.name <= last)
            for part in sorted(hour.glob("*.parquet"))
        ]


STAGE_PREFIX = "_writing-"  # a batch being written: <prefix><host>-<pid>-<random>


def _remove_abandoned_stages(root: Path) -> None:
    """Staging folders of writers on this host that are gone (killed mid-write)."""
    host = socket.gethostname()
    for stage in root.glob(f"{STAGE_PREFIX}*"):
        owner, _, rest = stage.name[len(STAGE_PREFIX) :].rpartition("-")[0].rpartition("-")
        if owner == host and rest.isdigit() and not process_alive(int(rest)):
            shutil.rmtree(stage, ignore_errors=True)


def process_alive(pid: int) -> bool:
    """Whether a process of this pid runs (one of another user's counts): a writer that is
    gone left its scratch behind."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _os_reason(exc: OSError) -> str:
    """An OSError as the one line a user needs: the system's reason (pyarrow's message
    repeats it after its own words) and the file, when known."""
    reason = (
        os.strerror(exc.errno)
        if exc.errno
        in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EIO)
        else " ".join(str(exc).split())
    )
    return f"{reason} ({exc.filename})" if exc.filename else reason


COLUMNS = (
    "stream",
    "ts",
    "frame",
    "s",
    "p",
    "o",
    "o_num",
    "o_time",
    "seq",
    "start",
)  # what a read returns


# SipHash-2-4's key for the triples' hashes: fixed, so that every file of the lake, whoever
# wrote it, hashes a triple alike (``tests/physical/test_statistics.py`` pins one)
HASH_KEY = "rsp-lake-triples"
# odd 64-bit multipliers that make (s, p, o) and (o, p, s) hash apart
_P_FACTOR, _O_FACTOR = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F


def triple_hashes(s: Sequence[str], p: Sequence[str], o: Sequence[str]):
    """A 64-bit hash of each triple (numpy ``uint64``): SipHash-2-4 of each term's UTF-8 bytes
    (pandas' ``hash_array``, in C), combined by position. Two triples with one hash are taken
    for a repeat, which costs a de-duplication and is never wrong; a repeat is never missed."""
    import numpy as np
    from pandas.util import hash_array

    hashed = [
        hash_array(np.asarray(column, dtype=object), hash_key=HASH_KEY, categorize=True)
        for column in (s, p, o)
    ]
    with np.errstate(over="ignore"):  # arithmetic modulo 2^64
        return hashed[0] ^ (hashed[1] * np.uint64(_P_FACTOR)) ^ (hashed[2] * np.uint64(_O_FACTOR))


def _timestamps(values: list[datetime | None], pool: pa.MemoryPool) -> pa.Array:
    """Aware datetimes (or None) as a µs timestamp column: a batch has a few thousand times
    for a million rows, and pyarrow converts an int ten times as fast as a datetime."""
    us = {t: to_us(t) for t in set(values) if t is not None}
    return pa.array(
        [None if t is None else us[t] for t in values], pa.int64(), memory_pool=pool
    ).cast(pa.timestamp("us", tz="UTC"), memory_pool=pool)


def _memory_pool() -> pa.MemoryPool:
    """Where a batch's columns are built: jemalloc where pyarrow has it. pyarrow's default,
    mimalloc, hands freed memory back to the system at once, and each column of a large batch
    then faults in fresh pages, which are dear on a virtual machine: the eight-day CityBench
    file's columns (``Lake.table``) took 4.2-4.8 s that way and 1.8-2.3 s with jemalloc."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without it
        return pa.default_memory_pool()


def _spark_schema(partitions: bool = False):
    from pyspark.sql import types as T

    fields = [
        T.StructField("stream", T.StringType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("frame", T.StringType()),
        T.StructField("s", T.StringType()),
        T.StructField("p", T.StringType()),
        T.StructField("o", T.StringType()),
        T.StructField("o_num", T.DoubleType()),
        T.StructField("o_time", T.TimestampType()),
        T.StructField("seq", T.LongType()),
        T.StructField("start", T.TimestampType()),
    ]
    if partitions:
        fields += [
            T.StructField("stream_key", T.StringType()),
            T.StructField("hour", T.StringType()),
        ]
    return T.StructType(fields)


class FileLoad(NamedTuple):
    """What loading one stream file into the lake did (``load_files``)."""

    source: str
    accepted: int  # elements written
    repeated: int  # statements of a triple its frame already held
    rejections: list[Rejection]

    @property
    def rejected_triples(self) -> int:
        return sum(r.triples for r in self.rejections)


def load_files(
    lake: Lake,
    files: Sequence[tuple[str, Path]],
    known_frames: Callable[[str, Sequence[datetime]], dict[datetime, str]] | None = None,
    each: Callable[[Path, StreamBatch], None] | None = None,
) -> list[FileLoad]:
    """Read stream files (stream IRI, path) into the lake, in the order given: a file's place
    among its stream's files is its delivery order (``StreamBatch.order``), and a time that
    several files bring is one frame, named by the first of them (with ``known_frames``, which
    gives a stream's frames at some times, ``{ts: frame IRI}``: by the frame already known at
    that time, such as the frame store's ``rsp_jobs.store.frames.known_frames``; the lake does
    not read the store, which is built on it). A large file is read
    and written in batches of whole frames (``read_stream_chunks``), each handed to ``each``
    (path, batch) once it is in the lake, so that no file is held whole."""
    known: dict[str, dict] = {}  # per stream: time -> frame IRI
    loads: list[FileLoad] = []
    delivered: Counter[str] = Counter()
    for iri, path in files:
        mine = known.setdefault(iri, {})
        base = hashlib.sha1(f"{iri}|{Path(path)}".encode()).hexdigest()[:16]
        accepted, repeated, rejections = 0, 0, []
        for k, batch in enumerate(read_stream_chunks(path, iri, order=delivered[iri])):
            if known_frames is not None:
                for ts, frame in known_frames(iri, [p.ts for p in batch.parts]).items():
                    mine.setdefault(ts, frame)
            merge_known_frames(batch, mine)
            if k == 0:
                # an earlier load of the file, in however many chunks
                lake.discard(iri, base, chunks=True)
            lake.write(batch, batch_id=base if k == 0 else f"{base}c{k}")
            accepted, repeated = (
                accepted + len(batch.elements),
                repeated + sum(batch.duplicates.values()),
            )
            rejections += batch.rejections
            if each is not None:
                each(Path(path), batch)
        delivered[iri] += 1
        loads.append(FileLoad(str(Path(path)), accepted, repeated, rejections))
    return loads


def project_lake() -> Lake:
    """The lake of the project home (``<RSP_HOME>/lake``): what DAG runs read and write."""
    from rsp_jobs import settings

    return Lake(settings.home_dir() / "lake")
