"""What a batch must satisfy, as Great Expectations suites, and the table each suite reads.

GX expectations look at one table, row by row or column by column, so facts about frames and
schedules become derived columns of that table (its "view"): ``frame_head`` marks one row per
(stream, frame, timestamp), ``range_property`` names the declared range a reading must lie in,
``close_off_schedule_us`` says how far a window close is from the query's schedule. Each
expectation that reads a derived column says why in its notes, which Data Docs show.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from rsp_jobs.quality.ranges import Range, range_column
from rsp_jobs.times import from_us

INPUT_SUITE = "rsp_input_batch"
OUTPUT_SUITE = "rsp_output_batch"
LAKE_COLUMNS = ("stream", "ts", "frame", "s", "p", "o", "o_num", "o_time")
REQUIRED = (
    "stream",
    "ts",
    "frame",
    "s",
    "p",
    "o",
)  # o_num and o_time are null unless typed literals
WINDOW_COLUMNS = ("query_iri", "window_open", "window_close", "row_count")

# N-Triples terms (W3C RDF 1.1 N-Triples, section 7): absolute IRIs, blank nodes, literals.
_IRI_CHARS = r'(?:[^\x00-\x20<>"{}|^`\\]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})'
ABSOLUTE_IRI = rf"[A-Za-z][A-Za-z0-9+.-]*:{_IRI_CHARS}*"
IRI = rf"<{ABSOLUTE_IRI}>"
BNODE = r"_:\w(?:[\w.-]*[\w-])?"
LITERAL = (
    r'"(?:[^"\\\n\r]|\\[tbnrf"\'\\]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*"'
    rf"(?:\^\^{IRI}|@[A-Za-z]+(?:-[A-Za-z0-9]+)*)?"
)
TERMS = {"s": (IRI, BNODE), "p": (IRI,), "o": (IRI, BNODE, LITERAL)}


def whole(*alternatives: str) -> str:
    """A regex matching the whole value (GX's pandas engine searches, it does not match)."""
    return rf"^(?:{'|'.join(alternatives)})\Z"


def input_suite(stream: str, interval: tuple[datetime, datetime] | None, ranges: Iterable[Range]):
    """Rows of one ingested batch: the lake's columns, well-formed terms of ``stream``,
    timestamps in ``[start, end)`` (None: unchecked), frames that TA-RDF allows (one timestamp
    per frame IRI, one frame per stream and timestamp, times not decreasing in batch order) and
    readings inside their declared ranges."""
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.expectations.row_conditions import (
        AndCondition,
        Column,
        ComparisonCondition,
    )

    head = Column("frame_head") == True  # noqa: E712 (a GX condition, not a Python comparison)
    frames: dict[str, Any] = dict(  # keywords of three expectations, each of its own type
        row_condition=head,
        meta={"where": "frame_head"},
        notes="frame_head marks the first row of each (stream, frame, ts): one row per frame",
    )
    expectations = [
        *(gxe.ExpectColumnToExist(column=c) for c in LAKE_COLUMNS),
        *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in REQUIRED),
        gxe.ExpectColumnValuesToBeInSet(column="stream", value_set=[stream]),
        gxe.ExpectColumnValuesToMatchRegex(column="frame", regex=whole(ABSOLUTE_IRI)),
        *(
            gxe.ExpectColumnValuesToMatchRegex(column=c, regex=whole(*kinds))
            for c, kinds in TERMS.items()
        ),
        gxe.ExpectColumnValuesToBeUnique(column="frame", **frames),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["stream", "ts"], **frames),
        gxe.ExpectColumnValuesToBeIncreasing(column="ts", **frames),
    ]
    if interval is not None:
        start, end = interval
        expectations.append(
            gxe.ExpectColumnValuesToBeBetween(
                column="ts", min_value=start, max_value=end, strict_max=True
            )
        )
    for r in ranges:
        condition: ComparisonCondition | AndCondition = Column("range_property") == r.shape
        if r.undefined is not None:
            condition = condition & (Column("o_num") != r.undefined)
        expectations.append(
            gxe.ExpectColumnValuesToBeBetween(
                column="o_num",
                min_value=r.minimum,
                max_value=r.maximum,
                strict_min=r.strict_min,
                strict_max=r.strict_max,
                row_condition=condition,
                meta={"where": f"range_property == {r.shape}"},
                notes=f"range_property: the readings that {r.shape} in ontology/quality.ttl applies to"
                + (
                    f", except the undefined value {r.undefined:g}"
                    if r.undefined is not None
                    else ""
                ),
            )
        )
    return gx.ExpectationSuite(INPUT_SUITE, expectations=expectations)


def input_view(
    rows: pd.DataFrame, ranges: Iterable[Range], background: Iterable[str | Path] = ()
) -> pd.DataFrame:
    """The rows with ``frame_head`` and ``range_property`` added (a missing lake column stays
    missing, for the suite to report)."""
    keys = rows.reindex(columns=["stream", "frame", "ts"])
    return rows.assign(
        frame_head=~keys.duplicated().to_numpy(),
        range_property=range_column(rows, ranges, background).to_numpy(),
    )


def output_suite(query_iri: str, interval: tuple[datetime, datetime] | None):
    """Windows of one evaluation run: one row per window close of ``query_iri``, closes on the
    query's schedule and in ``(after, until]`` (None: unchecked), counts not negative."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    expectations = [
        *(gxe.ExpectColumnToExist(column=c) for c in WINDOW_COLUMNS),
        *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in WINDOW_COLUMNS),
        gxe.ExpectColumnValuesToBeInSet(column="query_iri", value_set=[query_iri]),
        gxe.ExpectColumnValuesToBeBetween(
            column="close_off_schedule_us",
            min_value=0,
            max_value=0,
            notes="close_off_schedule_us: how far the close is from the query's schedule (t0 + RANGE + k*STEP, k >= 0, or the ticks of COMPUTED EVERY), in µs",
        ),
        gxe.ExpectColumnValuesToBeBetween(column="row_count", min_value=0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["query_iri", "window_close"]),
    ]
    if interval is not None:
        after, until = interval
        expectations.append(
            gxe.ExpectColumnValuesToBeBetween(
                column="window_close", min_value=after, max_value=until, strict_min=True
            )
        )
    return gx.ExpectationSuite(OUTPUT_SUITE, expectations=expectations)


def output_view(windows: pd.DataFrame, first_close_us: int, step_us: int) -> pd.DataFrame:
    """The windows with ``close_off_schedule_us``: (close − first close) mod step, or the distance
    to the first close for a close before it (the query's schedule, ``rsp_jobs.algebra.schedule``)."""
    closes = pd.to_datetime(windows.reindex(columns=["window_close"])["window_close"], utc=True)
    offset = (closes - from_us(first_close_us)) // pd.Timedelta(microseconds=1)
    return windows.assign(
        close_off_schedule_us=offset.where(offset < 0, offset % step_us).abs().to_numpy()
    )
