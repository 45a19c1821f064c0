"""The registered queries under ``queries/`` and the streams they read (``queries/streams.toml``),
as plain values the DAG factory and the tasks share.

A query file ``queries/<application>/<name>.rsp`` (windows, or an EP-SPARQL pattern) or a DOTR
rule ``<name>.dotr`` is registered as it is; an optional
``<name>.toml`` beside it sets its micro-batch (``batch = "10m"``, a whole number of STEPs, or
of COMPUTED EVERY d when the query gives it: its evaluation grid) and
window origin (``t0``), and an ``[alert]`` table makes its results raise alerts
(``rsp_jobs.alerts.build``). Without it a run covers the smallest multiple of STEP of at least one
minute (patterns: one minute, since any batch works for them). ``queries/streams.toml`` names each input stream (the key is its landing directory and
ingest DAG), its allowed lateness and late-data policy, the raw ``format`` its landing directory
also accepts (``rsp_jobs.ingest.sources``), and the files of background graphs.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.alerts.build import AlertConfig
from rsp_jobs.algebra.dotr import RulePlan
from rsp_jobs.algebra.patterns import check_batchable, pattern_lookback_us, pattern_streams
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.regimes import check_regime
from rsp_jobs.algebra.schedule import REPORT_NON_EMPTY, check_report, schedule
from rsp_jobs.compiler import compile_file
from rsp_jobs.errors import InputError, RspError
from rsp_jobs.ingest.csv_mapping import CsvMapping, parse_mapping
from rsp_jobs.ingest.sources import check_format
from rsp_jobs.language.ast import TimeWindow
from rsp_jobs.textfile import read_text
from rsp_jobs.times import (
    US_PER_MS,
    datetime_lexical,
    duration_text,
    from_us,
    ms_to_us,
    parse_duration,
    parse_us,
    to_us,
)

log = logging.getLogger("rsp.registry")
MINUTE_US = 60_000_000
# where a DAG's interval grid starts by default: live runs start now, history is a backfill
DEFAULT_START = datetime(2000, 1, 1, tzinfo=UTC)


def scheduled_runs() -> bool:
    """``RSP_SCHEDULED_RUNS`` (default true): whether query DAGs over input streams run on their
    timetable. Off, they run only when triggered with an interval (a replay of history, the
    demo); chained queries still run on their upstream's asset events."""
    return os.environ.get("RSP_SCHEDULED_RUNS", "true").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


def queries_dir() -> Path:
    return settings.queries_dir()


@dataclass(frozen=True)
class StreamConfig:
    key: str  # names the landing directory and the ingest DAG
    iri: str
    allowed_lateness_us: int = 0
    late_policy: str = "drop"  # or "reevaluate"
    format: str | None = (
        None  # a raw format of rsp_jobs.ingest.sources ("dart"); None: TriG/N-Quads
    )
    mapping: CsvMapping | None = None  # format "csv": its [streams.<key>.mapping] table

    @property
    def landing_dir(self) -> Path:
        return settings.home_dir() / "landing" / self.key


@dataclass(frozen=True)
class RegisteredQuery:
    path: Path
    application: str
    query: ContinuousQuery | RulePlan
    batch_us: int  # a run's data interval: a whole number of steps
    t0_us: int
    background: tuple[str, ...] = field(default=())
    entailment: str = "simple"  # or rdfs, rdfs++ (``entailment = "rdfs"`` in the query's .toml)
    alert: AlertConfig | None = None  # an ``[alert]`` table: its results raise alerts
    # an unbounded EP-SPARQL pattern's ``retention = "1h"``: longer matches are not reported and
    # the pattern reads back that far; without it, its partial matches are kept in the store
    retention_us: int | None = None
    # which closes report (``report = "every-close"`` in the query's .toml; ``algebra.schedule``)
    report: str = REPORT_NON_EMPTY

    @property
    def dag_id(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.query.name.rstrip("/").rsplit("/", 1)[-1])

    @property
    def iri(self) -> str:
        from rsp_jobs.store.results import query_iri

        return query_iri(self.query)

    @property
    def output_stream(self) -> str:
        return f"{self.iri}/stream"

    @property
    def kind(self) -> str:
        """``window`` (C-SPARQL windows), ``pattern`` (EP-SPARQL) or ``rule`` (DOTR)."""
        if not isinstance(self.query, ContinuousQuery):
            return "rule"
        return "pattern" if self.query.pattern else "window"

    @property
    def derives_stream(self) -> bool:
        """Whether downstream queries can read the output (REGISTER STREAM; a rule's events)."""
        return self.kind == "rule" or self.query.derives_stream

    @property
    def streams(self) -> list[str]:
        return pattern_streams(self.query)

    @property
    def keeps_partials(self) -> bool:
        """An unbounded EP-SPARQL pattern without retention keeps its partial matches in the store."""
        return self.kind == "pattern" and self.range_us is None

    @property
    def range_us(self) -> int | None:
        """How far back a run reads: the widest window, or a pattern's bounded duration (or its
        retention); None for an unbounded pattern, which keeps its partial matches instead."""
        if self.kind != "window":
            return pattern_lookback_us(self.query, self.retention_us)
        return ms_to_us(max(w.range_ms for w in _time_windows(self.query, self.path)))

    @property
    def step_us(self) -> int:
        """The reporting grid: STEP, or COMPUTED EVERY when given (``rsp_jobs.algebra.schedule``),
        or for patterns the batch (a match is reported by the batch that holds its end)."""
        if self.kind != "window":
            return self.batch_us
        return _grid(self.query, self.t0_us, self.path)[0]

    def affected_closes(self, ts_us: int, until_us: int) -> range:
        """The evaluated closes a frame at ``ts_us`` could change: the windows that hold it, or
        for patterns the batches holding a match end in ``[ts, ts + bound]`` (unbounded: every
        batch from ``ts`` on)."""
        span = self.range_us  # None: an unbounded pattern (a window query's is its widest RANGE)
        if span is None:
            return self.closes(ts_us - 1, until_us)
        if self.kind == "window":
            return self.closes(ts_us, min(ts_us + span, until_us))
        return self.closes(ts_us - 1, min(ts_us + span + self.step_us - 1, until_us))

    @property
    def first_close_us(self) -> int:
        """The first close of the query's grid (``rsp_jobs.algebra.schedule``); patterns: t0."""
        if self.kind != "window":
            return self.t0_us
        return _grid(self.query, self.t0_us, self.path)[1]

    def _phase(self) -> int:
        return self.first_close_us % self.step_us

    def closes(self, after_us: int, until_us: int) -> range:
        """The window closes ``c`` with ``after < c <= until`` (µs), on the query's grid."""
        phase = self._phase()
        first = after_us + 1 + (phase - after_us - 1) % self.step_us
        return range(first, until_us + 1, self.step_us)

    def check_interval(self, after: datetime, until: datetime) -> None:
        """A run on the query's timetable (scheduled, or triggered by hand) covers ``(after,
        until]``: whole batches (one or more), both ends on the query's grid of closes, so that
        it evaluates exactly the closes of those batches. Anything else is an ``InputError``
        saying what would be whole (``dags/README.md``)."""
        a, u, step = to_us(after), to_us(until), self.step_us
        if u > a and (u - a) % self.batch_us == 0 and (u - self._phase()) % step == 0:
            return
        end = self.first_batch_end(until)
        raise InputError(
            f"{self.dag_id}: the run's interval ({datetime_lexical(after)}, {datetime_lexical(until)}] is not whole "
            f"batches: a run covers one or more batches of {duration_text(self.batch_us // US_PER_MS)} ending on the "
            f"query's grid of closes (every {duration_text(step // US_PER_MS)}), e.g. "
            f"({datetime_lexical(end - timedelta(microseconds=self.batch_us))}, {datetime_lexical(end)}]"
        )

    def first_batch_end(self, not_before: datetime | None = None) -> datetime:
        """The first batch boundary at or after ``not_before`` on the query's close grid
        (``t0 + RANGE + k*STEP``, or ``k*d`` with COMPUTED EVERY d), so that every run's
        interval ends on a window close."""
        phase = self._phase()
        us = to_us(not_before or DEFAULT_START)
        return from_us(us + (phase - us) % self.step_us)


def default_batch_us(step_us: int) -> int:
    return -(-MINUTE_US // step_us) * step_us


def _time_windows(query: ContinuousQuery | RulePlan, path: Path) -> list[TimeWindow]:
    """The windows of a scheduled query, every one ``[RANGE .. STEP ..]``."""
    windows = [w.window for w in query.windows]
    timed = [w for w in windows if isinstance(w, TimeWindow)]
    if not windows or len(timed) != len(windows):
        raise InputError(f"{path}: a scheduled query needs time windows ([RANGE .. STEP ..])")
    return timed


def _grid(query: ContinuousQuery | RulePlan, t0_us: int, path: Path) -> tuple[int, int]:
    """(step, first close) of a scheduled query's grid of closes (µs)."""
    _time_windows(query, path)
    grid = schedule(query, t0_us)
    if grid.step is None or grid.first_close is None:  # only a query without time windows
        raise InputError(f"{path}: a scheduled query needs time windows ([RANGE .. STEP ..])")
    return grid.step, grid.first_close


def load_query(path: Path, root: Path | None = None) -> RegisteredQuery:
    """Parse and check one registered query file; errors name the file and line. (No Spark
    here: the DAG processor calls this for every query file.)"""
    root = root or queries_dir()
    query = compile_file(path)
    if not isinstance(query, ContinuousQuery | RulePlan):
        raise InputError(
            f"{path}: a registered query is C-SPARQL, EP-SPARQL or a DOTR rule, not a one-time "
            "TA-SPARQL query"
        )
    options = _catalog(path.with_suffix(".toml"))
    t0_us = _t0_us(options["t0"], path) if "t0" in options else 0
    if isinstance(query, ContinuousQuery) and not query.pattern:
        # the evaluation grid: STEP, or COMPUTED EVERY when given (different STEPs need it)
        step = _grid(query, t0_us, path)[0]
    else:  # a pattern reads back its bounded duration; any batch will do
        check_batchable(query)  # MINUS over a stream cannot be micro-batched: refuse it here
        step = US_PER_MS
    batch = (
        _duration_us(options["batch"], path.with_suffix(".toml"), "batch")
        if "batch" in options
        else default_batch_us(step)
    )
    if batch <= 0 or batch % step:
        raise InputError(
            f"{path.with_suffix('.toml')}: batch must be a whole number of STEPs "
            f"(or of COMPUTED EVERY when given: {step // US_PER_MS} ms), got {batch // US_PER_MS} ms"
        )
    relative = path.relative_to(root) if path.is_relative_to(root) else Path(path.name)
    application = relative.parts[0] if len(relative.parts) > 1 else "default"
    entailment = check_regime(
        options.get("entailment", "simple"), f"{path.with_suffix('.toml')}: entailment"
    )
    alert = (
        AlertConfig.from_table(options["alert"], path.with_suffix(".toml"))
        if "alert" in options
        else None
    )
    retention = None
    if "retention" in options:
        if not isinstance(query, ContinuousQuery) or not query.pattern:
            raise InputError(
                f"{path.with_suffix('.toml')}: retention applies to EP-SPARQL patterns only"
            )
        retention = _duration_us(options["retention"], path.with_suffix(".toml"), "retention")
        if retention <= 0:
            raise InputError(
                f"{path.with_suffix('.toml')}: retention must be positive, got {options['retention']!r}"
            )
    report = check_report(
        options.get("report", REPORT_NON_EMPTY), f"{path.with_suffix('.toml')}: report"
    )
    if report != REPORT_NON_EMPTY and (not isinstance(query, ContinuousQuery) or query.pattern):
        raise InputError(
            f"{path.with_suffix('.toml')}: report applies to window queries, whose windows close; "
            "a pattern or a rule reports its matches"
        )
    return RegisteredQuery(
        path,
        application,
        query,
        batch,
        t0_us,
        tuple(background_files(query)),
        entailment,
        alert,
        retention,
        report,
    )


def discover(root: Path | None = None) -> tuple[list[RegisteredQuery], dict[Path, RspError]]:
    """Every query under ``root``: those that load, and the error of each that does not. One
    file's error, whatever it is, loses that file only; two files registering one name (one
    DAG id, one output stream) are both refused, each error naming the other file."""
    root = root or queries_dir()
    loaded, errors = [], {}
    for path in sorted([*root.rglob("*.rsp"), *root.rglob("*.dotr")]):
        try:
            loaded.append(load_query(path, root))
        except RspError as exc:
            errors[path] = exc
        except OSError as exc:  # unreadable, a dangling link, a folder named like a query
            errors[path] = InputError(f"{path}: cannot be read ({exc.strerror or exc})")
        except (RecursionError, MemoryError, OverflowError, ValueError, TypeError) as exc:
            # a bug of ours, met on this file's content: still this file's error only
            errors[path] = InputError(f"{path}: cannot be loaded ({type(exc).__name__}: {exc})")
    by_name: dict[str, list[RegisteredQuery]] = {}
    for rq in loaded:
        by_name.setdefault(rq.dag_id, []).append(rq)
    for rqs in by_name.values():
        if len(rqs) > 1:
            for rq in rqs:
                others = ", ".join(str(o.path) for o in rqs if o is not rq)
                errors[rq.path] = InputError(
                    f"{rq.path}: registers the name {rq.dag_id!r} ({rq.iri}), as {others} "
                    "does; each registered query needs its own name"
                )
    return [rq for rq in loaded if rq.path not in errors], dict(sorted(errors.items()))


def _catalog(path: Path) -> dict:
    """A TOML file's content (empty when absent), parsed once per version of the file."""
    if not path.is_file():
        return {}
    return _parsed(path, path.stat().st_mtime_ns)


@functools.cache
def _parsed(path: Path, _version: int) -> dict:
    try:
        return tomllib.loads(read_text(path, "settings"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def catalog_path() -> Path:
    return queries_dir() / "streams.toml"


def streams() -> dict[str, StreamConfig]:
    """The input streams of ``queries/streams.toml``, by IRI. Each declared stream's landing
    folder is made here (``ensure_landing_dirs``), so that a producer finds it as soon as the
    stream is declared: the DAG file and the CLI both read the catalog through this."""
    path = catalog_path()
    found = {}
    for key, entry in _catalog(path).get("streams", {}).items():
        where = f"{path}: [streams.{key}]"
        if "iri" not in entry:
            raise InputError(f"{where}: missing iri")
        policy = entry.get("late_policy", "drop")
        if policy not in ("drop", "reevaluate"):
            raise InputError(f"{where}: late_policy must be drop or reevaluate, got {policy!r}")
        lateness = _duration_us(
            entry.get("allowed_lateness", "0ms"), path, f"streams.{key}.allowed_lateness"
        )
        fmt = check_format(entry.get("format"), f"{where}.format")
        mapping = None
        if "mapping" in entry:
            if fmt != "csv":
                raise InputError(f'{where}: a mapping table is for format = "csv" streams')
            mapping = parse_mapping(entry["mapping"], f"{where}.mapping")
        elif fmt == "csv":
            raise InputError(
                f'{where}: format = "csv" needs a [streams.{key}.mapping] table (docs/ingest.md)'
            )
        found[entry["iri"]] = StreamConfig(key, entry["iri"], lateness, policy, fmt, mapping)
    ensure_landing_dirs(found.values())
    return found


def ensure_landing_dirs(configs: Iterable[StreamConfig]) -> None:
    """``<RSP_HOME>/landing/<key>/`` for each stream, readable by its owner only like the home.
    A home that cannot be written is left for the ingest to report: reading the catalog (the
    DAG processor does it for every parse) must not fail on it."""
    for config in configs:
        try:
            (settings.home_dir() / "landing").mkdir(mode=0o700, exist_ok=True)
            config.landing_dir.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            log.warning("cannot make the landing folder %s: %s", config.landing_dir, exc)
            return


def declared(stream: str) -> StreamConfig:
    """A stream of the catalog by its key or its IRI; an ``InputError`` lists the declared ones."""
    catalog = streams()
    for config in catalog.values():
        if stream in (config.key, config.iri, f"<{config.iri}>"):
            return config
    known = "\n".join(f"  {c.key}  <{c.iri}>" for c in catalog.values()) or "  (none)"
    raise InputError(
        f"{stream}: not a stream declared in {catalog_path()}; declare it there as "
        f"[streams.<key>] with its iri (docs/ingest.md). The declared streams:\n{known}"
    )


def stream_config(iri: str) -> StreamConfig:
    """A stream's configuration; streams not in the catalog get the defaults."""
    return streams().get(iri) or StreamConfig(re.sub(r"[^A-Za-z0-9_]+", "_", iri)[-60:], iri)


def background_paths() -> list[Path]:
    """Every background file of the catalog (what types the properties of stream readings)."""
    table = _catalog(catalog_path()).get("background", {})
    return [_resolve(text) for text in table.values()]


def _resolve(text: str) -> Path:
    path = Path(text.format(data=settings.data_dir()))
    return path if path.is_absolute() else settings.REPO_ROOT / path


def background_files(query: ContinuousQuery | RulePlan) -> list[str]:
    """The files of the query's FROM graphs, from the catalog's ``[background]`` table
    (``{data}`` is ``RSP_DATA_DIR``, relative paths are from the repository)."""
    table = _catalog(catalog_path()).get("background", {})
    files = []
    for clause in query.graphs:
        if clause.iri in table:
            files.append(f"{clause.iri}={_resolve(table[clause.iri])}")
    return files


def _duration_us(text: str, path: Path, key: str) -> int:
    try:
        return ms_to_us(parse_duration(str(text)))
    except ValueError as exc:
        raise InputError(f"{path}: {key}: {exc}") from None


def _t0_us(text, path: Path) -> int:
    """``t0``: an ISO 8601 string or a TOML date-time, without an offset UTC."""
    try:
        return parse_us(str(text))
    except ValueError:
        raise InputError(f"{path}: t0: not an ISO 8601 time: {text!r}") from None
