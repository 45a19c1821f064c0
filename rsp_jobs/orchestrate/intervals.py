"""A run's data interval ``(after, until]``: the window closes it evaluates.

A scheduled run gets it from Airflow's data interval. A run triggered by hand may give it as
the DAG's params ``after`` and ``until`` (the trigger form's two date-time fields: a replay of
recorded data over any number of whole batches), which win over the data interval. A run
scheduled on a derived stream's asset gets it from the asset events that triggered it (their
``extra`` carries the upstream run's interval), so a chain of queries evaluates the same closes
at every level.
"""

from __future__ import annotations

from datetime import datetime

from rsp_jobs.errors import RspError
from rsp_jobs.times import parse_datetime


def _moment(text) -> datetime:
    """Airflow's datetime as it is, or an ISO 8601 time (an asset event's extra) in UTC."""
    return text if isinstance(text, datetime) else parse_datetime(str(text))


def from_events(events) -> tuple[datetime, datetime] | None:
    """The interval covered by upstream asset events (several queued ones merge), or None."""
    spans = [
        (_moment(e.extra["after"]), _moment(e.extra["until"]))
        for e in events
        if e.extra and "after" in e.extra and "until" in e.extra
    ]
    if not spans:
        return None
    return min(a for a, _ in spans), max(u for _, u in spans)


def run_interval(context) -> tuple[datetime, datetime]:
    """``(after, until]`` of the running task's DAG run."""
    triggering = context.get("triggering_asset_events") or {}
    events = [event for evs in triggering.values() for event in evs]
    if events:
        interval = from_events(events)
        if interval:
            return interval
    params = context.get("params") or {}
    given = [params.get("after"), params.get("until")]
    if any(given):
        if not all(given):
            raise RspError(
                f"run {context.get('run_id')}: give both params, after and until, or neither "
                f"(got after={given[0]!r}, until={given[1]!r})"
            )
        try:
            return _moment(given[0]), _moment(given[1])
        except ValueError as exc:
            raise RspError(f"run {context.get('run_id')}: params after/until: {exc}") from None
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if start is None or end is None:
        raise RspError(
            f"run {context.get('run_id')}: no data interval and no upstream asset event "
            "with one; trigger it with a logical date"
        )
    return _moment(start), _moment(end)
