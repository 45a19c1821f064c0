"""How fast the frame store loads and answers, on SQLite and on PostgreSQL (``make bench``:
``python -m rsp_jobs.bench.store``, ``bench-results/store.json``; a benchmark of the store, kept
under ``bench/`` so that ``rsp_jobs/store/`` holds only the store).

Loads go through ``load_batch``, the path ingest uses: the CSRBench stream and a generated
stream (frames of five triples), into a fresh store, then once more to time the idempotent
re-load. Look-ups go through the public functions (LAST, a point, a one-day range) over a
frames table filled in bulk with a million frames, and each is shown with the plan the database
chose for it. Every backend gets a store of its own: a new SQLite file under the project home,
a new PostgreSQL schema at ``RSP_BENCH_PG_URL`` that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import OperationalError

from rsp_jobs import settings
from rsp_jobs.errors import InputError
from rsp_jobs.ingest import csrbench
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch, read_stream_file
from rsp_jobs.store import db, frames
from rsp_jobs.store.models import Frame, table_of

PG_URL = os.environ.get("RSP_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
XSD = "http://www.w3.org/2001/XMLSchema#"
START = datetime(2024, 1, 1, tzinfo=UTC)


def generated_batch(
    n_frames: int,
    stream: str = "http://bench.example/streams/generated",
    step: timedelta = timedelta(seconds=1),
) -> StreamBatch:
    """A sensor-like stream: each frame one observation in five triples (type, sensor,
    numeric value, observation time, unit)."""
    rng = random.Random(n_frames)
    batch = StreamBatch(stream=stream, source=f"generated:{n_frames}")
    for i in range(n_frames):
        ts = START + i * step
        frame, obs = f"{stream}/frame/{i}", f"<{stream}/obs/{i}>"
        value = round(rng.uniform(0, 120), 2)
        batch.elements += [
            Element(stream, ts, frame, obs, p, o, o_num, o_time)
            for p, o, o_num, o_time in (
                (
                    "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>",
                    "<http://purl.oclc.org/NET/ssnx/ssn#Observation>",
                    None,
                    None,
                ),
                (
                    "<http://purl.oclc.org/NET/ssnx/ssn#observedBy>",
                    f"<http://bench.example/sensor/{i % 449}>",
                    None,
                    None,
                ),
                ("<http://bench.example/value>", f'"{value}"^^<{XSD}double>', value, None),
                (
                    "<http://bench.example/time>",
                    f'"{ts:%Y-%m-%dT%H:%M:%SZ}"^^<{XSD}dateTime>',
                    None,
                    ts,
                ),
                ("<http://bench.example/unit>", '"km/h"', None, None),
            )
        ]
    return batch


def time_load(url: str, batch: StreamBatch) -> dict:
    """Load into the (fresh) store at ``url``, then load the same batch again."""
    db.upgrade(url)
    engine = db.engine(url)
    started = time.perf_counter()
    report = frames.load_batch(engine, batch)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    again = frames.load_batch(engine, batch)
    reload_seconds = time.perf_counter() - started
    if (again.frames_written, again.frames_unchanged) != (0, report.frames_written):
        raise RuntimeError(f"re-loading the same batch wrote frames again: {again}")
    return {
        "frames": report.frames_written,
        "triples": report.triples_written,
        "seconds": round(seconds, 3),
        "frames_per_s": round(report.frames_written / seconds),
        "triples_per_s": round(report.triples_written / seconds),
        "reload_unchanged_seconds": round(reload_seconds, 3),
    }


def fill_frames(engine: Engine, streams: list[str], per_stream: int, step: timedelta) -> float:
    """Bulk-insert frames (no triples) for the look-ups, by the store's own bulk path."""
    started = time.perf_counter()
    with db.write_transaction(engine) as conn:
        ids = [frames.register_stream(conn, iri) for iri in streams]
        frames.bulk_insert(
            conn,
            table_of(Frame),
            frames.FRAME_COLUMNS,
            (
                (stream_id, START + i * step, f"{iri}/frame/{i}", 5, f"{i:064x}")
                for stream_id, iri in zip(ids, streams)
                for i in range(per_stream)
            ),
        )
        conn.exec_driver_sql("ANALYZE")
    return time.perf_counter() - started


def time_lookups(
    engine: Engine, streams: list[str], per_stream: int, step: timedelta, repeats: int
) -> dict:
    """Median and 95th percentile latency (ms) of each look-up, with the plan of its query."""
    rng = random.Random(0)
    last_seen: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        last_seen[:] = [(statement, parameters)]

    day = timedelta(days=1)

    def some_frame() -> tuple[str, datetime]:  # leaves a whole day of frames after it
        return rng.choice(streams), START + rng.randrange(per_stream - day // step) * step

    def one_day_range() -> list:
        stream, start = some_frame()
        return frames.frames_in_range(engine, stream, start, start + day)

    cases: dict[str, Callable[[], object]] = {
        "last": lambda: frames.last_frame(engine, rng.choice(streams)),
        "point": lambda: frames.frame_at(engine, *some_frame()),
        "one_day_range": one_day_range,
    }
    out = {}
    for name, call in cases.items():
        call()  # warm: pool connection, statement cache
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            found = call()
            samples.append((time.perf_counter() - started) * 1000)
            if not found:
                raise RuntimeError(f"{name} look-up found nothing")
        event.listen(engine, "before_cursor_execute", capture)
        rows = call()
        event.remove(engine, "before_cursor_execute", capture)
        samples.sort()
        out[name] = {
            "median_ms": round(statistics.median(samples), 3),
            "p95_ms": round(samples[int(0.95 * len(samples)) - 1], 3),
            "rows": len(rows) if isinstance(rows, list) else 1,
            "plan": _plan(engine, *last_seen[0]),
        }
    return out


def _plan(engine: Engine, statement: str, parameters) -> list[str]:
    explain = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
    with engine.connect() as conn:
        return [str(row[-1]) for row in conn.exec_driver_sql(explain + statement, parameters)]


@contextmanager
def sqlite_store(name: str) -> Iterator[str]:
    with tempfile.TemporaryDirectory(
        prefix=f"store-bench-{name}-", dir=settings.home_dir()
    ) as work:
        url = f"sqlite:///{Path(work) / 'store.sqlite'}"
        yield url
        db.engine(url).dispose()


@contextmanager
def pg_store(name: str) -> Iterator[str]:
    admin = create_engine(PG_URL)
    schema = f"rsp_bench_{name}_{secrets.token_hex(4)}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = (
        make_url(PG_URL)
        .update_query_dict({"options": f"-csearch_path={schema}"})
        .render_as_string(hide_password=False)
    )
    try:
        yield url
    finally:
        db.engine(url).dispose()
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


def pg_reachable() -> str | None:
    """None when PostgreSQL answers at PG_URL, else why not."""
    try:
        with create_engine(PG_URL).connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        return None
    except OperationalError as exc:
        return f"PostgreSQL not reachable at {PG_URL}: {str(exc.orig).strip().splitlines()[0]}"


def run(generated_frames: int, lookup_frames: int, repeats: int) -> dict:
    backends = {"sqlite": sqlite_store}
    skipped = pg_reachable()
    if skipped is None:
        backends["postgresql"] = pg_store
    skipped_csr: str | None
    try:
        work = settings.home_dir() / "bench"
        work.mkdir(parents=True, exist_ok=True)
        csr = read_stream_file(csrbench.write_stream(work / "csrbench.nq"), csrbench.STREAM)
    except InputError as exc:
        csr, skipped_csr = None, str(exc)
    else:
        skipped_csr = None
    generated = generated_batch(generated_frames)
    streams = [f"http://bench.example/streams/s{k}" for k in range(10)]
    per_stream, step = lookup_frames // len(streams), timedelta(seconds=30)
    results: dict = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "backends": {},
    }
    if skipped:
        results["skipped"] = skipped
    if skipped_csr:
        results["csrbench_skipped"] = skipped_csr
    for backend, store in backends.items():
        out = results["backends"][backend] = {}
        if csr is not None:
            with store("csr") as url:
                out["load_csrbench"] = time_load(url, csr)
        with store("gen") as url:
            out[f"load_generated_{generated_frames}x5"] = time_load(url, generated)
        with store("lookup") as url:
            db.upgrade(url)
            engine = db.engine(url)
            fill = fill_frames(engine, streams, per_stream, step)
            out["lookups"] = {
                "frames": per_stream * len(streams),
                "streams": len(streams),
                "frame_spacing_s": step.total_seconds(),
                "fill_seconds": round(fill, 1),
                "repeats": repeats,
                **time_lookups(engine, streams, per_stream, step, repeats),
            }
        print(f"{backend}: {json.dumps(out)}", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.bench.store", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--output", type=Path, help="write the results here as JSON (also printed)")
    parser.add_argument("--generated-frames", type=int, default=100_000)
    parser.add_argument("--lookup-frames", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    results = run(args.generated_frames, args.lookup_frames, args.repeats)
    text = json.dumps(results, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
