"""The ``rsp`` command."""

from __future__ import annotations

import argparse
import errno
import functools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.algebra.regimes import REGIMES
from rsp_jobs.algebra.schedule import REPORT_NON_EMPTY, REPORTS
from rsp_jobs.errors import InputError, RspError
from rsp_jobs.textfile import read_text
from rsp_jobs.times import from_us, iso_ms, ms_to_us, parse_us, to_us


def parse_time(text: str) -> int:
    """ISO 8601 (``Z`` or an offset; naive means UTC) or epoch milliseconds → epoch µs."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return ms_to_us(int(text))
    try:
        return parse_us(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time or epoch milliseconds: {text!r}"
        ) from None


def stream_spec(text: str) -> tuple[str, str]:
    iri, sep, path = text.rpartition("=")
    if not sep or not iri:
        raise argparse.ArgumentTypeError(f"expected IRI=PATH, got {text!r}")
    return iri.strip("<>"), path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rsp", description="RDF stream processing on Spark")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser(
        "evaluate",
        help="evaluate a continuous query over stream files",
        description="Evaluate a C-SPARQL / RSP-QL query over stream files and write one "
        "JSON object per reported window; for an EP-SPARQL pattern query or "
        "a DOTR rule (.dotr), one JSON object per match. A DOTR rule that consumes "
        "keeps what it consumed in the store (--store, else the default one), so "
        "consecutive --from/--to intervals give what one run gives.",
    )
    ev.add_argument("query_file", type=Path)
    ev.add_argument(
        "--stream",
        action="append",
        type=stream_spec,
        default=[],
        metavar="IRI=PATH",
        help="a stream file (TriG or N-Quads, one named graph per frame) for the stream IRI",
    )
    ev.add_argument(
        "--background",
        action="append",
        default=[],
        metavar="[IRI=]PATH",
        help="an RDF file for a FROM / FROM NAMED graph (matched by IRI or file name)",
    )
    ev.add_argument(
        "--t0", type=parse_time, default=0, help="origin of the window grid (default: epoch)"
    )
    ev.add_argument(
        "--from",
        dest="after",
        type=parse_time,
        default=None,
        help="report windows closing after this time",
    )
    ev.add_argument(
        "--to",
        dest="until",
        type=parse_time,
        default=None,
        help="report windows closing at or before this time",
    )
    ev.add_argument(
        "--entailment",
        choices=REGIMES,
        default="simple",
        help="entailment regime: the background closed with owlrl, stream triples entailed per "
        "frame (default: simple, no reasoning)",
    )
    ev.add_argument(
        "--report",
        choices=REPORTS,
        default=REPORT_NON_EMPTY,
        help="which window closes report: non-empty (C-SPARQL's: the windows that hold data) or "
        "every-close (also windows without data, answered over an empty graph: COUNT(*) is 0)",
    )
    ev.add_argument(
        "--output", type=Path, default=None, help="write JSON lines here (default: stdout)"
    )
    ev.add_argument(
        "--lake",
        type=Path,
        default=None,
        help="load the streams into this lake and keep it (default: a temporary one)",
    )
    ev.add_argument(
        "--store",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="also persist the input frames, the window results (as frames of the query's "
        "output stream) and their provenance in the frame store (default URL: RSP_STORE_URL "
        "or the SQLite store under the project home)",
    )
    ev.set_defaults(run=cmd_evaluate)

    ex = sub.add_parser(
        "explain",
        help="print a query's or rule's optimized plan",
        description="Compile a .rsp query or .dotr rule and print its logical plan after "
        "the optimizer (one operator a line); several .dotr files are planned as "
        "one rule set, evaluated together. --skip leaves optimizer rules out, "
        "to compare plans or to rule one out when an answer looks wrong.",
    )
    ex.add_argument("query_file", type=Path)
    ex.add_argument(
        "more_rules",
        type=Path,
        nargs="*",
        metavar="rule_file",
        help="further .dotr files: the plan of the rules together",
    )
    ex.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="RULE",
        help="an optimizer rule to leave out (order_joins, bound_join_keys, prune_predicates, "
        "window_solutions, share_event_queries, push_down_conditions, "
        "share_events_across_rules, share_events_differing_in_an_iri, "
        "share_candidates_across_alike_rules); repeatable",
    )
    ex.add_argument(
        "--physical",
        action="store_true",
        help="also print the physical plan of a window query, EP-SPARQL pattern or DOTR rules: how "
        "it runs on Spark for the slice it would read (of --lake, default the project's lake; or "
        "of --rows)",
    )
    ex.add_argument(
        "--lake",
        type=Path,
        default=None,
        help="with --physical: the lake whose slice is planned for",
    )
    ex.add_argument(
        "--rows",
        type=int,
        default=None,
        help="with --physical: plan for a slice of this many stream rows instead of a lake's",
    )
    ex.add_argument(
        "--from",
        dest="after",
        type=parse_time,
        default=None,
        help="with --physical: the windows closing (matches ending) after this time",
    )
    ex.add_argument(
        "--to",
        dest="until",
        type=parse_time,
        default=None,
        help="with --physical: the windows closing (matches ending) at or before this time",
    )
    ex.add_argument(
        "--entailment", choices=REGIMES, default="simple", help="with --physical: the regime"
    )
    ex.set_defaults(run=cmd_explain)

    store = sub.add_parser("store", help="manage the frame store")
    store_sub = store.add_subparsers(dest="store_command", required=True)
    up = store_sub.add_parser(
        "upgrade", help="create the store or migrate it to the current schema"
    )
    up.add_argument(
        "--url", default=None, help="store URL (default: RSP_STORE_URL or the SQLite store)"
    )
    up.set_defaults(run=cmd_store_upgrade)

    prov = sub.add_parser(
        "provenance", help="the lineage of a result or frame: a summary, or W3C PROV-O"
    )
    prov.add_argument("iri", help="a stored frame, result frame or activity IRI")
    prov.add_argument(
        "--format",
        choices=["summary", "turtle", "jsonld"],
        default="summary",
        help="summary (default): one line per activity, in time order; turtle or jsonld: "
        "the PROV-O graph",
    )
    prov.add_argument(
        "--depth",
        type=int,
        default=None,
        metavar="N",
        help="only N levels of activities upstream (1: the one that generated IRI)",
    )
    prov.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    prov.set_defaults(run=cmd_provenance)

    aud = sub.add_parser(
        "audit", help="check that a result's inputs are unchanged, and re-evaluate it"
    )
    aud.add_argument("iri", help="a stored result frame (or any stored frame) IRI")
    aud.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    aud.add_argument(
        "--reevaluate",
        action="store_true",
        help="also recompute the window from the stored input frames and compare, with the "
        "t0, entailment and background files the evaluation recorded (stored before "
        "they were recorded: the registered query's, else rsp evaluate's defaults); a "
        "pattern's or rule's match is refused",
    )
    aud.add_argument(
        "--background",
        action="append",
        default=[],
        metavar="[IRI=]PATH",
        help="background files the query needs when re-evaluating (default: the recorded ones)",
    )
    aud.add_argument(
        "--t0",
        type=parse_time,
        default=None,
        help="origin of the window grid when re-evaluating (default: the recorded one)",
    )
    aud.add_argument(
        "--entailment",
        choices=REGIMES,
        default=None,
        help="entailment regime when re-evaluating (default: the recorded one)",
    )
    aud.set_defaults(run=cmd_audit)

    exp = sub.add_parser(
        "export", help="write a stored stream as TA-RDF (frames with the dsv: vocabulary)"
    )
    exp.add_argument("--stream", required=True, help="the stream IRI")
    exp.add_argument("--format", choices=["trig", "nquads"], default="trig")
    exp.add_argument("--output", type=Path, required=True, help="the file to write (.trig or .nq)")
    exp.add_argument(
        "--from", dest="start", type=parse_time, default=None, help="first frame time (inclusive)"
    )
    exp.add_argument("--to", dest="end", type=parse_time, default=None, help="end time (exclusive)")
    exp.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    exp.set_defaults(run=cmd_export)

    imp = sub.add_parser("import", help="load a TA-RDF export (or any stream file) into the store")
    imp.add_argument("path", type=Path)
    imp.add_argument(
        "--stream", default=None, help="the stream IRI (default: the file's dsv:belongsTo)"
    )
    imp.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    imp.set_defaults(run=cmd_import)

    ing = sub.add_parser(
        "ingest",
        help="load raw data of a declared stream (CityBench, DART, CSV, TriG, N-Quads)",
        description="Map each FILE to frames of the stream (declared in queries/streams.toml) "
        "and load it into the lake and the store as the ingest DAG does (--to lake, the "
        "default), or put it in the stream's landing folder for a running deployment's ingest "
        "DAG (--to landing). Rejected rows are reported with file:line and quarantined "
        "(rsp quarantine). docs/ingest.md",
    )
    ing.add_argument("files", nargs="+", type=Path, metavar="FILE")
    ing.add_argument(
        "--stream", required=True, metavar="KEY|IRI", help="the stream's key or IRI in streams.toml"
    )
    ing.add_argument(
        "--format",
        dest="kind",
        default=None,
        choices=["citybench", "csv", "dart", "trig", "nquads"],
        help="what FILE is (default: the stream's declared format, else from the suffix: "
        ".trig, .nq, .stream)",
    )
    ing.add_argument(
        "--to",
        dest="to",
        choices=["lake", "landing"],
        default="lake",
        help="lake: load now into the lake and the store (default); landing: leave it in "
        "<RSP_HOME>/landing/<key>/ for the deployment's ingest DAG",
    )
    ing.add_argument(
        "--mapping",
        type=Path,
        default=None,
        metavar="FILE",
        help="a CSV mapping (TOML) instead of the stream's [streams.<key>.mapping]",
    )
    ing.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    ing.set_defaults(run=cmd_ingest)

    tq = sub.add_parser(
        "query",
        help="answer a TA-SPARQL one-time query over the stored frames",
        description="TA-SPARQL: ?x[t], ?x[t1 .. t2], ?x[LAST], ?x[FIRST], ?x[*] and ?x.t over "
        "the frames in the store; prints SPARQL 1.1 JSON results.",
    )
    tq.add_argument("text", help="the query text, or @FILE to read it from a file")
    tq.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    tq.set_defaults(run=cmd_query)

    al = sub.add_parser(
        "alerts",
        help="list the stored alerts",
        description="The alerts the alert DAGs raised (tsunami detections, congestion, silent "
        "segments), oldest first, with their provenance frame.",
    )
    al.add_argument(
        "--since",
        type=parse_time,
        default=None,
        help="only alerts whose event time is at or after this",
    )
    al.add_argument("--kind", choices=["tsunami", "congestion", "silence", "plain"], default=None)
    al.add_argument(
        "--json", action="store_true", help="one JSON object per alert (default: one line each)"
    )
    al.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    al.set_defaults(run=cmd_alerts)

    qu = sub.add_parser(
        "quarantine",
        help="list the rejected input, or show one rejected part",
        description="The input the store read but rejected (malformed lines, frames the input "
        "checks refused), newest first: id, time, stream, file:line, triples and reason. With "
        "an id, that part's reason and its text as it was read.",
    )
    qu.add_argument("part", nargs="?", type=int, default=None, help="a rejected part's id: show it")
    qu.add_argument("--stream", default=None, metavar="IRI", help="only this stream's")
    qu.add_argument(
        "--since", type=parse_time, default=None, help="only parts quarantined at or after this"
    )
    qu.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    qu.add_argument("--json", action="store_true", help="one JSON object per part")
    qu.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    qu.set_defaults(run=cmd_quarantine)

    pl = sub.add_parser(
        "plot",
        help="plot a DART station's detections or a day of traffic congestion",
        description="Writes a PNG from the frame store: `rsp plot dart 21418` (height, prediction, "
        "residual, detections) or `rsp plot traffic 2014-08-02` (congestion per segment, "
        "alerts marked).",
    )
    pl.add_argument("what", choices=["dart", "traffic"])
    pl.add_argument("which", help="the DART station id, or the traffic day (YYYY-MM-DD)")
    pl.add_argument(
        "--from",
        dest="start",
        type=parse_time,
        default=None,
        help="DART: first time (default, with --to unset: 2 h before the station's first detection, "
        "or a day before its last sample)",
    )
    pl.add_argument(
        "--to",
        dest="end",
        type=parse_time,
        default=None,
        help="DART: end time (default, with --from unset: 4 h after its last detection, or its last sample)",
    )
    pl.add_argument(
        "--output", type=Path, default=None, help="the PNG to write (default: <RSP_HOME>/plots/...)"
    )
    pl.add_argument(
        "--store", default=None, metavar="URL", help="store URL (default: RSP_STORE_URL or SQLite)"
    )
    pl.set_defaults(run=cmd_plot)

    demo = sub.add_parser(
        "demo",
        help="run the engine's main job on the embedded defaults",
        description="CSRBench and CityBench queries over the shared data (or a generated "
        "sample when it is missing), with a summary.",
    )
    demo.set_defaults(run=cmd_demo)

    st = sub.add_parser(
        "settings",
        help="print the settings file and the settings in effect, with where each comes from",
        description="The project settings file (rsp.toml, or RSP_SETTINGS) and every setting "
        "set in this process: from the file, or from the environment, which overrides it.",
    )
    st.set_defaults(run=cmd_settings)
    return parser


def cmd_settings(args) -> int:
    print(settings.in_use())
    names = sorted(n for n in os.environ if n in settings.FILE_SETTINGS | settings.SECRET_SETTINGS)
    for name in names:
        value = "(set)" if name in settings.SECRET_SETTINGS else os.environ[name]
        source = "file" if name in settings.FROM_FILE else "environment"
        print(f"{name}={value}  ({source})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from sqlalchemy.exc import DBAPIError

    # SIGTERM (a task's timeout, `kill`) unwinds like Ctrl-C: scratch directories and open
    # transactions are cleaned up by the usual finally blocks
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_signal) if in_main_thread else None
    try:
        import rsp_jobs

        if rsp_jobs.SETTINGS_ERROR is not None:
            raise rsp_jobs.SETTINGS_ERROR
        if sys.stderr.isatty() and args.command != "settings":  # a pipe gets only the output
            print(f"rsp: {settings.in_use()}", file=sys.stderr)
        return args.run(args) or 0
    except RspError as exc:
        print(f"rsp: error: {exc}", file=sys.stderr)
        return 2
    except DBAPIError as exc:  # the store: unreachable, refusing us, or not a store
        print(f"rsp: error: {_store_problem(exc, getattr(args, 'store', None))}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno not in _NO_ROOM:
            raise  # anything else is a bug to see whole
        print(f"rsp: error: {_no_room(exc)}", file=sys.stderr)
        return 2
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


# what a writer meets when the machine, not the input, is at fault: a full disk or quota, a file
# past the size limit, a read-only file system
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def _no_room(exc: OSError) -> str:
    """One line for a write that found no room: what could not be written, and where the
    project home is (the usual place to make room)."""
    what = f"cannot write {exc.filename}" if exc.filename else "cannot write a file"
    reason = os.strerror(exc.errno) if exc.errno is not None else str(exc)
    return f"{what}: {reason} (RSP_HOME is {settings.home_dir()})"


def _exit_on_signal(signum, _frame):
    sys.exit(128 + signum)


def _remove_abandoned_scratch(home: Path) -> None:
    """The scratch lakes of ``rsp evaluate`` runs that were killed before they could remove
    their own (``evaluate-<pid>-*``, the process gone): removed by the next run."""
    from rsp_jobs.ingest.lake import process_alive

    for folder in home.glob("evaluate-*"):
        pid = folder.name.split("-")[1]
        if folder.is_dir() and (not pid.isdigit() or not process_alive(int(pid))):
            shutil.rmtree(folder, ignore_errors=True)


def _store_problem(exc, url: str | None) -> str:
    """One line naming the store (its password hidden) and the driver's first line."""
    from sqlalchemy.engine import make_url

    from rsp_jobs.store import db

    shown = make_url(url or db.store_url()).render_as_string(hide_password=True)
    reason = (
        " ".join(str(exc.orig).split("\n")[0].split())
        if exc.orig is not None
        else type(exc).__name__
    )
    if "no such table" in reason or ("relation" in reason and "does not exist" in reason):
        return f"the store {shown} has no schema yet ({reason}): run `rsp store upgrade --url URL`"
    return f"cannot use the store {shown}: {reason}"


def _utc(us: int | None) -> datetime | None:
    return None if us is None else from_us(us)


def cmd_alerts(args) -> int:
    from rsp_jobs.alerts.store import list_alerts

    alerts = list_alerts(_store_engine(args.store), since=_utc(args.since), kind=args.kind)
    for alert in alerts:
        if args.json:
            print(json.dumps(alert, ensure_ascii=False, sort_keys=True))
        else:
            print(
                f"{alert['event_time']}  {alert['kind']:<10} {alert['message']}  [{alert['frame']}]"
            )
    if not args.json:
        print(f"rsp: {len(alerts)} alerts", file=sys.stderr)
    return 0


def cmd_quarantine(args) -> int:
    from dataclasses import asdict

    from rsp_jobs.store.quarantine import quarantined, quarantined_part

    def as_json(part) -> str:
        return json.dumps({**asdict(part), "at": iso_ms(to_us(part.at))}, ensure_ascii=False)

    engine = _store_engine(args.store)
    if args.part is not None:
        part = quarantined_part(engine, args.part)
        if args.json:
            print(as_json(part))
        else:
            print(f"#{part.id} {iso_ms(to_us(part.at))}  <{part.stream}>  {part.where}")
            print(f"{part.triples} triple(s) rejected: {part.reason}")
            print(part.text)
        return 0
    if args.limit < 1:
        raise InputError(f"--limit {args.limit}: give 1 or more")
    parts, total = quarantined(engine, args.stream, _utc(args.since), args.limit)
    for part in parts:
        if args.json:
            print(as_json(part))
        else:
            print(
                f"#{part.id:<6} {iso_ms(to_us(part.at))}  <{part.stream}>  {part.where}  "
                f"{part.triples} triple(s): {part.reason}"
            )
    shown = f"the latest {len(parts)} of " if len(parts) < total else ""
    print(f"rsp: {shown}{total} rejected part(s) quarantined", file=sys.stderr)
    return 0


def cmd_plot(args) -> int:
    from rsp_jobs import plots

    engine = _store_engine(args.store)
    out = args.output or settings.home_dir() / "plots" / f"{args.what}-{args.which}.png"
    if args.what == "dart":
        path = plots.plot_dart(engine, args.which, out, _utc(args.start), _utc(args.end))
    else:
        path = plots.plot_traffic(engine, from_us(parse_time(args.which)), out)
    print(path)
    return 0


def cmd_evaluate(args) -> int:
    from rsp_jobs.algebra.patterns import pattern_streams
    from rsp_jobs.algebra.plan import ContinuousQuery
    from rsp_jobs.algebra.tasparql import OneTimeQuery
    from rsp_jobs.compiler import compile_file, is_pattern
    from rsp_jobs.engine import Interval, evaluate, match
    from rsp_jobs.errors import InputError
    from rsp_jobs.ingest.lake import Lake, load_files
    from rsp_jobs.results import WindowResult

    if not args.query_file.is_file():
        raise InputError(f"{args.query_file}: query file not found")
    query = compile_file(args.query_file)
    if isinstance(query, OneTimeQuery):
        raise InputError(
            f"{args.query_file}: a TA-SPARQL query is one-time, over the store: run it with rsp query"
        )
    pattern = is_pattern(query)
    if pattern and args.report != REPORT_NON_EMPTY:
        raise InputError(
            f"{args.query_file}: --report applies to window queries; a pattern or a rule "
            "reports its matches"
        )
    declared = set(pattern_streams(query))
    given = {iri for iri, _ in args.stream}
    missing = declared - given
    if missing:
        raise InputError(
            f"{args.query_file}: no --stream given for "
            + ", ".join(f"<{m}>" for m in sorted(missing))
        )
    scratch = None
    if args.lake is None:
        _remove_abandoned_scratch(settings.home_dir())
    try:
        if args.lake is None:
            scratch = Path(
                tempfile.mkdtemp(prefix=f"evaluate-{os.getpid()}-", dir=settings.home_dir())
            )
            lake = Lake(scratch / "lake")
        else:
            lake = Lake(args.lake)
        store = _store_engine(args.store) if args.store is not None else None
        started = datetime.now(UTC)
        known = None
        if store is not None:
            from rsp_jobs.store.frames import known_frames
            from rsp_jobs.store.provenance import store_ingest

            known = functools.partial(known_frames, store)
        for loaded in load_files(
            lake,
            args.stream,
            known,
            each=None
            if store is None
            else lambda path, batch: store_ingest(store, batch, str(path), started),
        ):
            _report_rejections(loaded)
        out = args.output.open("w", encoding="utf-8") if args.output else sys.stdout
        progress = _Progress(enabled=sys.stderr.isatty())
        windows: list[WindowResult] | None = [] if store is not None else None
        started = datetime.now(UTC)
        _start_spark()
        try:
            interval = Interval(args.after, args.until)
            if pattern:  # one JSON object per match, reported at its end
                carried = _Consumption.of(query, store, args.after, args.until)
                matches, newly = match(
                    query,
                    lake,
                    args.background,
                    interval,
                    args.entailment,
                    carried.before if carried else frozenset(),
                )
                for m in matches:
                    out.write(json.dumps(m.to_json(), ensure_ascii=False) + "\n")
                if carried is not None:
                    carried.found(matches, newly)
                if windows is not None:
                    windows += WindowResult.of_matches(matches)
                    used = [f for m in matches for f in m.events]
            elif isinstance(query, ContinuousQuery):  # a window query: the rest are patterns
                for window in evaluate(
                    query,
                    lake,
                    args.background,
                    args.t0,
                    interval,
                    entailment=args.entailment,
                    report=args.report,
                ):
                    out.write(json.dumps(window.to_json(), ensure_ascii=False) + "\n")
                    progress.tick(window.window_close)
                    if windows is not None:
                        windows.append(window)
        finally:
            progress.done()
            if args.output:
                out.close()
        if pattern and carried is not None and store is None:
            carried.write()
        if store is not None:
            from rsp_jobs.spark.session import application_id, get_spark
            from rsp_jobs.store.results import store_evaluation

            also = carried.record if pattern and carried is not None else None
            ran_with = dict(entailment=args.entailment, background=args.background)
            if not pattern:
                ran_with["report"] = args.report
            stored = store_evaluation(
                store,
                query,
                windows or [],
                started,
                application_id(get_spark()),
                **(
                    dict(kind="pattern_match", used_frames=used, also=also)
                    if pattern
                    else dict(t0_us=args.t0)
                ),
                **ran_with,
            )
            print(
                f"rsp: stored {stored.windows} windows ({stored.frames_written} frames written) as "
                f"activity {stored.activity_iri}",
                file=sys.stderr,
            )
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


class _Consumption:
    """What a consuming DOTR rule consumed, carried between ``rsp evaluate`` runs as the DAG
    tasks carry it (``orchestrate/tasks.py``, ``store/consumption.py``): a run over ``(after,
    until]`` starts from what matches at or before ``after`` consumed and replaces what its own
    matches consume, so consecutive ``--from/--to`` intervals give what one run gives (DOTR §3:
    consumed events "cannot be used in subsequent evaluations of the same rule"). Kept in the
    ``--store`` given, else in the default store (RSP_STORE_URL or the SQLite store under the
    project home), keyed by the rule's IRI; a run without ``--from`` starts afresh."""

    def __init__(self, engine, iri: str, after: int | None, until: int | None):
        from rsp_jobs.store.consumption import consumed_before

        self.engine, self.iri, self.after, self.until = engine, iri, _utc(after), _utc(until)
        self.before = consumed_before(engine, iri, self.after)
        self.records: list = []

    @classmethod
    def of(cls, query, store, after: int | None, until: int | None) -> _Consumption | None:
        """None unless ``query`` is a rule that consumes."""
        if not getattr(query, "consumes", None):
            return None
        from rsp_jobs.store.results import query_iri

        carried = cls(
            store if store is not None else _store_engine(""), query_iri(query), after, until
        )
        if carried.before:
            print(
                f"rsp: {len(carried.before)} fact(s) consumed before "
                f"{'the start' if after is None else iso_ms(after)} carried from the store",
                file=sys.stderr,
            )
        return carried

    def found(self, matches: list, newly) -> None:
        from rsp_jobs.store.consumption import consumption_records

        self.records = consumption_records(matches, newly)

    def record(self, conn, activity_iri: str | None) -> None:
        from rsp_jobs.store.consumption import replace_consumed

        replace_consumed(conn, self.iri, self.after, self.until, self.records, activity_iri)

    def write(self) -> None:
        from rsp_jobs.store.db import write_transaction

        with write_transaction(self.engine) as conn:
            self.record(conn, None)


def _start_spark() -> None:
    """Start Spark on RSP_SPARK_MASTER, else the Airflow connection, else local[2], before the
    engine asks for a session (which would know the environment only)."""
    from rsp_jobs.orchestrate.spark_connection import get_spark

    get_spark()


def _store_engine(url: str):
    from rsp_jobs.store import db

    db.upgrade(url or None)
    return db.engine(url or None)


def cmd_store_upgrade(args) -> int:
    from rsp_jobs.store import db

    revision = db.upgrade(args.url)
    print(f"rsp: store at revision {revision}", file=sys.stderr)
    return 0


def cmd_provenance(args) -> int:
    from rsp_jobs.store import db
    from rsp_jobs.store.lineage import lineage, prov_graph, stored_iri, summary

    engine = db.engine(args.store)
    iri = stored_iri(engine, args.iri)
    if args.format == "summary":
        print("\n".join(summary(lineage(engine, iri, args.depth))))
        return 0
    graph = prov_graph(engine, iri, args.depth)
    sys.stdout.write(graph.serialize(format="json-ld" if args.format == "jsonld" else "turtle"))
    return 0


def cmd_audit(args) -> int:
    from rsp_jobs.store import db
    from rsp_jobs.store.lineage import audit, stored_iri

    engine = db.engine(args.store)
    report = audit(engine, stored_iri(engine, args.iri))
    print(
        f"{report.iri}: {report.checked} input frame(s) checked; "
        + (
            "all unchanged"
            if report.inputs_unchanged
            else f"{len(report.changed)} changed, {len(report.missing)} missing"
            + (
                f", {len(report.background_changed)} background file(s) changed"
                if report.background_changed
                else ""
            )
        )
    )
    for iri in report.changed:
        print(f"  changed: {iri}")
    for iri in report.missing:
        print(f"  missing: {iri}")
    for path, recorded, now in report.background_changed:
        print(
            f"  background changed: {path} (sha256 {recorded[:12]}… when evaluated, "
            + (f"{now[:12]}… now)" if now else "the file is gone)")
        )
    ok = report.inputs_unchanged
    # refused (an error, exit 2) without a recorded query text, or for a pattern
    if args.reevaluate:
        from rsp_jobs.reevaluate import reevaluate

        again = reevaluate(engine, report, args.background, args.t0, args.entailment)
        if again.note:
            print(f"  note: {again.note}")
        verdict = "same result" if again.same else "DIFFERENT result"
        if again.background_changed and not args.background:
            verdict += " (with the background as it is now, changed since the evaluation)"
        print(
            f"  re-evaluated {report.query_iri} at {again.stored['window_close']} ({again.settings}): {verdict}"
        )
        ok = ok and again.same
    return 0 if ok else 1


def cmd_export(args) -> int:
    from rsp_jobs.store.tardf import export_stream

    report = export_stream(
        _store_engine(args.store or ""),
        args.stream,
        args.output,
        args.format,
        _utc(args.start),
        _utc(args.end),
    )
    print(
        f"rsp: wrote {report.frames} frames, {report.triples} triples to {args.output}",
        file=sys.stderr,
    )
    return 0


def cmd_import(args) -> int:
    from rsp_jobs.store.tardf import import_stream

    report = import_stream(_store_engine(args.store or ""), args.path, args.stream)
    # new vs already there: an import of a stream the store holds (another export of it, in
    # either format) should find every frame unchanged, and says so
    print(
        f"rsp: {report.frames_new} frames new, {report.frames_unchanged} already stored "
        f"(unchanged), {report.frames_replaced} replaced, {report.frames_merged} merged into; "
        f"{report.triples_written} triples written, {report.invariant} time-invariant "
        f"statements, {report.quarantined} quarantined",
        file=sys.stderr,
    )
    return 0


def cmd_ingest(args) -> int:
    from rsp_jobs.orchestrate.ingest_sources import ingest_sources

    config, done = ingest_sources(
        args.stream, args.files, args.kind, args.to, args.mapping, args.store
    )
    quarantined = 0
    for item in done:
        report = item.report
        if report is not None and report.status == "skipped":
            print(f"{item.source} ({item.kind}): skipped, loaded before (same content)")
        elif report is not None:
            quarantined += report.quarantined
            late = f", {report.late_frames} late" if report.late_frames else ""
            print(
                f"{item.source} ({item.kind}): {report.frames} frames, {report.triples} triples "
                f"accepted, {report.quarantined} quarantined{late}; watermark {report.watermark or '-'}"
            )
        else:
            mapped = "" if item.frames is None else f"{item.frames} frames mapped, "
            print(f"{item.source} ({item.kind}): {mapped}landed as {item.landed}")
            if item.rejected:
                where = (
                    "the ingest DAG quarantines them"
                    if item.quarantined_there
                    else "not in the deployment's quarantine: fix them, or use --to lake"
                )
                print(f"  {len(item.rejected)} row(s) rejected ({where}):")
                for rejection in item.rejected[:10]:
                    print(f"    {rejection}")
                if len(item.rejected) > 10:
                    print(f"    ... and {len(item.rejected) - 10} more")
    if quarantined:
        print(
            f"rsp: {quarantined} quarantined: see them with `rsp quarantine --stream {config.iri}`"
        )
    return 0


def cmd_query(args) -> int:
    from rsp_jobs.algebra.tasparql import OneTimeQuery
    from rsp_jobs.compiler import compile
    from rsp_jobs.store import db
    from rsp_jobs.store.tasparql import run_query

    source = "<query>"
    text = args.text
    if text.startswith("@"):
        source, text = text[1:], read_text(text[1:], "query")
    plan = compile(text, source, "tasparql")
    if not isinstance(plan, OneTimeQuery):  # compile gives TA-SPARQL text its plan
        raise TypeError(f"{source}: TA-SPARQL compiled to {type(plan).__name__}")
    result = run_query(db.engine(args.store), plan)
    json.dump(
        {"head": {"vars": result.vars}, "results": {"bindings": result.rows}},
        sys.stdout,
        ensure_ascii=False,
        indent=1,
    )
    sys.stdout.write("\n")
    return 0


def cmd_explain(args) -> int:
    from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan
    from rsp_jobs.algebra.explain import explain
    from rsp_jobs.compiler import CompiledQuery, compile_file, compile_rule_set
    from rsp_jobs.errors import InputError

    files = [args.query_file, *args.more_rules]
    for path in files:
        if not path.is_file():
            raise InputError(f"{path}: query file not found")
    try:
        each = [compile_file(path, skip=args.skip) for path in files]
        compiled: CompiledQuery | RuleSetPlan = each[0]
        if len(each) > 1:
            rules = []
            for path, rule in zip(files, each):
                if not isinstance(rule, RulePlan):
                    raise InputError(f"{path}: only DOTR rules (.dotr) are planned together")
                rules.append(rule)
            compiled = compile_rule_set(rules, args.skip)
    except ValueError as err:  # an unknown optimizer rule, two rules of one name
        raise InputError(str(err)) from None
    sys.stdout.write(explain(compiled))
    if args.physical:
        sys.stdout.write(_physical(compiled, args))
    if isinstance(compiled, RulePlan):  # a rule alone is evaluated as a set of one (engine.match)
        alone = compile_rule_set([compiled], args.skip)
        if any(event.split for group in alone.groups for event in group.events):
            sys.stdout.write("As evaluated, a set of one:\n" + explain(alone))
    return 0


def _physical(compiled, args) -> str:
    """The physical plan of a window query, an EP-SPARQL pattern or DOTR rules for ``args``'
    slice (``planner.plan_windows``, ``patterns.plan_pattern``, ``dotr.plan_rules``)."""
    from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan
    from rsp_jobs.algebra.plan import ContinuousQuery
    from rsp_jobs.compiler import compile_rule_set
    from rsp_jobs.errors import InputError
    from rsp_jobs.ingest.lake import Lake, project_lake
    from rsp_jobs.physical import dotr, patterns, planner
    from rsp_jobs.physical.statistics import LakeStatistics

    if not isinstance(compiled, (ContinuousQuery, RulePlan, RuleSetPlan)):
        raise InputError(
            f"{args.query_file}: --physical plans window queries, patterns and rules; a "
            "TA-SPARQL query is one SQL statement"
        )
    stats = (
        planner.SliceOf(args.rows)
        if args.rows is not None
        else LakeStatistics(Lake(args.lake) if args.lake else project_lake())
    )
    if isinstance(compiled, RulePlan):  # a rule alone is evaluated as a set of one (engine.match)
        compiled = compile_rule_set([compiled], args.skip)
    if isinstance(compiled, RuleSetPlan):
        return dotr.plan_rules(compiled, stats, args.after, args.until, args.entailment).explain()
    if compiled.pattern:
        return patterns.plan_pattern(
            compiled, stats, args.after, args.until, args.entailment
        ).explain()
    return planner.plan_windows(
        compiled, stats, args.after, args.until, entailment=args.entailment
    ).explain()


def cmd_demo(args) -> int:
    from rsp_jobs import demo

    return demo.main()


def _report_rejections(loaded) -> None:
    """What a stream file's load rejected (a ``lake.FileLoad``), on stderr."""
    if not loaded.rejections:
        return
    repeated = loaded.repeated
    print(
        f"rsp: {loaded.source}: rejected {loaded.rejected_triples} triple(s) in {len(loaded.rejections)} "
        f"place(s); {loaded.accepted} accepted"
        + (f", {repeated} repeated within their frame" if repeated else "")
        + ":",
        file=sys.stderr,
    )
    for rejection in loaded.rejections[:10]:
        print(f"  {rejection}", file=sys.stderr)
    if len(loaded.rejections) > 10:
        print(
            f"  ... and {len(loaded.rejections) - 10} more (all are in the lake's quarantine)",
            file=sys.stderr,
        )


class _Progress:
    """A one-line counter on a terminal; silent when stderr is not one."""

    def __init__(self, enabled: bool):
        self.enabled, self.count, self.last = enabled, 0, 0.0

    def tick(self, label: str) -> None:
        self.count += 1
        now = time.monotonic()
        if self.enabled and now - self.last > 0.2:
            print(
                f"\rrsp: {self.count} windows reported (last closed {label})",
                end="",
                file=sys.stderr,
            )
            self.last = now

    def done(self) -> None:
        if self.enabled and self.count:
            print(f"\rrsp: {self.count} windows reported." + " " * 40, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
