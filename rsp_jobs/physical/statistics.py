"""The statistics of a slice of the stream lake that the physical planner and the engine ask
for before Spark reads it: how many rows a read scans, the hours it spans, whether it holds a
triple twice, its distinct times, its vocabulary and the terms at a place. All of them come from
the slice's Parquet files alone (footers, partition folders, dictionary columns), read by pyarrow
on the driver, with no Spark job and no store.

``LakeStatistics`` is the ``planner.Statistics`` of a real lake (``planner.SliceOf`` is that of
a made-up size). It lives beside the planner, not in ``rsp_jobs.ingest.lake``: the lake stores
and reads streams; what a slice's files say is the planner's input. The physical layer may read
the lake's files (pyarrow) and may not start Spark, so the planner stays testable without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

import pyarrow as pa
import pyarrow.dataset as pads

from rsp_jobs.algebra.plan import TermsAt
from rsp_jobs.ingest.lake import NO_WORDS, VOCABULARY_KEY, Lake, Vocabulary
from rsp_jobs.times import to_us


class LakeStatistics:
    """What the files of ``lake`` say of a slice ``(streams, start, end)``: the span a
    ``Lake.read`` with the same arguments returns, from the partitions (stream x hour) it
    touches."""

    def __init__(self, lake: Lake):
        self.lake = lake

    def rows(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> int:
        """How many rows a ``read`` of the same span scans: the rows of the partitions (stream x
        hour) it touches, counted from their Parquet footers (no Spark job). An upper bound of
        what it returns, as an hour is read whole."""
        import pyarrow.parquet as pq

        return sum(pq.read_metadata(part).num_rows for part in self.lake.parts(streams, start, end))

    def extent(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> tuple[int, int] | None:
        """``[first, last)`` (µs) of the hours a ``read`` of the span touches, from the partition
        folders alone (no file is opened): bounds of its times, to size an evaluation before it
        runs; None when it touches nothing."""
        hours = sorted(
            {
                part.parent.name.removeprefix("hour=")
                for part in self.lake.parts(streams, start, end)
            }
        )
        if not hours:
            return None
        first, last = (
            to_us(datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC))
            for hour in (hours[0], hours[-1])
        )
        return first, last + 3_600_000_000

    def facts(
        self,
        streams: Iterable[str],
        start: datetime | None = None,
        end: datetime | None = None,
        places: Iterable[TermsAt] = (),
    ) -> SliceFacts:
        """What the engine asks of a slice's files before Spark reads them (``SliceFacts``), in
        one read of the partitions (stream x hour) a ``read`` of the span touches: pyarrow,
        the files in parallel, ``s``, ``p`` and ``o`` as their dictionaries, no Spark job.
        ``places``: the ``(position, predicate)`` pairs whose terms to list (``s`` or ``o``;
        N-Triples). One read serves every fact: reading each fact file by file costs a read each."""
        import pyarrow.compute as pc

        places = list(dict.fromkeys(places))
        parts = self.lake.parts(streams, start, end)
        if not parts:
            return SliceFacts(False, [], NO_WORDS, {place: [] for place in places})
        triple = ["s", "p", "o"]
        dataset = pads.dataset(
            [str(part) for part in parts],
            format=pads.ParquetFileFormat(
                read_options=pads.ParquetReadOptions(dictionary_columns=triple)
            ),
        )
        # one dictionary a column
        table = dataset.to_table(columns=["ts", *triple]).unify_dictionaries()
        codes = pa.table(
            {
                name: pa.chunked_array(
                    [chunk.indices for chunk in table.column(name).chunks], pa.int32()
                )
                for name in triple
            }
        )
        ts = pc.unique(table.column("ts").cast(pa.int64()))
        if start is not None:
            ts = ts.filter(pc.greater_equal(ts, to_us(start)))
        if end is not None:
            ts = ts.filter(pc.less(ts, to_us(end)))
        return SliceFacts(
            codes.group_by(triple).aggregate([]).num_rows < table.num_rows,
            ts.to_pylist(),
            _vocabulary(dataset),
            {place: _terms_at(table, codes, *place) for place in places},
        )

    def repeats(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> bool:
        """Whether the partitions a ``read`` of the span touches hold a triple more than once
        (at one time or at several), without Spark (``windows.with_repeats`` asks the same of
        Spark, in a job). It may say yes where the read's rows repeat nothing (the hours are
        read whole, streams and predicates are not told apart), which costs a de-duplication,
        never no where they do. The triples are grouped by their dictionary numbers, which is
        cheaper than grouping their strings."""
        return self.facts(streams, start, end).repeats

    def repeats_by_hash(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> bool | None:
        """``repeats`` told from the files' triple hashes (the lake's ``h`` column), which holds
        8 bytes a triple whatever its terms: months of a stream fit the driver where their terms
        would not. None when a file of the span has no hashes (written before they existed): the
        caller asks Spark then. Two triples with one hash count as a repeat (``repeats``' yes
        where there is none, which costs a de-duplication only)."""
        import numpy as np

        parts = self.lake.parts(streams, start, end)
        if not parts:
            return False
        dataset = pads.dataset(
            [str(part) for part in parts], schema=pa.schema([("h", pa.int64())]), format="parquet"
        )
        hashes = dataset.to_table(columns=["h"]).column("h")
        if hashes.null_count:  # a file without the column reads it as NULL
            return None
        ordered = np.sort(hashes.to_numpy())
        return bool(len(ordered) > 1 and (ordered[1:] == ordered[:-1]).any())

    def times(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> list[int]:
        """The distinct times (µs) of what a ``read`` of the span returns, exactly its span
        ``[start, end)``: the windows holding data follow from them (``windows.Spans.active_of``)."""
        return self.facts(streams, start, end).times

    def terms(
        self,
        streams: Iterable[str],
        start: datetime | None = None,
        end: datetime | None = None,
        places: Iterable[TermsAt] = (),
    ) -> dict[TermsAt, list[str]]:
        """For each place ``(position, predicate)``, the distinct terms there in the triples with
        that predicate of the partitions a ``read`` of the span touches (a superset of the
        read's: the hours are read whole; ``optimize.rank_extrema``)."""
        return self.facts(streams, start, end, places).terms

    def vocabulary(
        self, streams: Iterable[str], start: datetime | None = None, end: datetime | None = None
    ) -> Vocabulary:
        """The ``Vocabulary`` of the partitions a ``read`` of the span touches, from their
        Parquet footers (``VOCABULARY_KEY``), or for a file written without it, from its ``p``
        and ``o`` columns. A superset of the read's, as an hour is read whole and a footer
        names its whole batch's. Footers only, not ``facts``: the engine asks this alone of
        slices too large to read on the driver."""
        parts = self.lake.parts(streams, start, end)
        return (
            _vocabulary(pads.dataset([str(part) for part in parts], format="parquet"))
            if parts
            else NO_WORDS
        )


class SliceFacts(NamedTuple):
    """A slice's facts from its files (``LakeStatistics.facts``)."""

    repeats: bool  # whether it holds a triple twice
    times: list[int]  # its distinct times (µs)
    vocabulary: Vocabulary  # what its triples name
    terms: dict[TermsAt, list[str]]  # the distinct terms at each place asked for


def _vocabulary(dataset: pads.Dataset) -> Vocabulary:
    """The union of the ``Vocabulary`` footers of ``dataset``'s files; a file written without
    one, from its ``p`` and ``o`` columns."""
    found = NO_WORDS
    for fragment in dataset.get_fragments():
        written = (fragment.physical_schema.metadata or {}).get(VOCABULARY_KEY)
        found |= (
            Vocabulary.from_json(written)
            if written is not None
            else Vocabulary.of(fragment.to_table(columns=["p", "o"]))
        )
    return found


def _terms_at(table: pa.Table, codes: pa.Table, position: str, predicate: str) -> list[str]:
    """The distinct terms at ``position`` of ``table``'s triples with ``predicate``, found by
    dictionary number (``table``'s columns share one dictionary each, ``codes`` their numbers)."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return []
    number = pc.index(table.column("p").chunk(0).dictionary, predicate).as_py()
    if number < 0:
        return []
    chosen = codes.column(position).filter(pc.equal(codes.column("p"), number))
    return table.column(position).chunk(0).dictionary.take(pc.unique(chosen)).to_pylist()
