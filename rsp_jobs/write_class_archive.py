"""Writes the class-data-sharing archive ``rsp_jobs.spark.class_archive`` names, from a driver
that runs what the engine runs: a lake written from a stream batch, and a query with a join,
OPTIONAL, FILTER and aggregates, evaluated both interpreted and compiled to Java (the two ways a
batch runs, ``rsp_jobs.spark.session.batch_settings``). Run once by ``scripts/bootstrap.sh``:

    python -m rsp_jobs.write_class_archive [--force]
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from datetime import UTC
from pathlib import Path

from rsp_jobs.spark.class_archive import archive_path

QUERY = """REGISTER QUERY archive AS
PREFIX : <http://example.org/archive#>
SELECT ?sensor (AVG(?v) AS ?mean) (COUNT(?v) AS ?n) (MAX(?v) AS ?top) (SAMPLE(?unit) AS ?u)
FROM STREAM <http://example.org/archive/stream> [RANGE 2m STEP 1m]
WHERE {
  ?obs :by ?sensor ; :value ?v .
  OPTIONAL { ?obs :unit ?unit }
  FILTER(?v > 1)
}
GROUP BY ?sensor
HAVING (COUNT(?v) > 0)
ORDER BY ?sensor
"""


def _workload(work: Path) -> None:
    from datetime import datetime, timedelta

    from rsp_jobs import compiler
    from rsp_jobs.algebra.plan import ContinuousQuery
    from rsp_jobs.engine import evaluate
    from rsp_jobs.ingest.lake import Lake
    from rsp_jobs.ingest.rdf_stream import Element, StreamBatch

    stream = "http://example.org/archive/stream"
    ex = "http://example.org/archive#"
    batch = StreamBatch(stream=stream, source="class-archive")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for minute in range(10):
        ts = start + timedelta(minutes=minute)
        for s in range(3):
            obs, value = f"<{ex}o{minute}_{s}>", minute + s
            batch.elements += [
                Element(
                    stream,
                    ts,
                    f"{stream}/frame/{minute}",
                    obs,
                    f"<{ex}by>",
                    f"<{ex}s{s}>",
                    None,
                    None,
                ),
                Element(
                    stream,
                    ts,
                    f"{stream}/frame/{minute}",
                    obs,
                    f"<{ex}value>",
                    f'"{value}"^^<http://www.w3.org/2001/XMLSchema#integer>',
                    float(value),
                    None,
                ),
            ]
            if s % 2:
                batch.elements.append(
                    Element(
                        stream,
                        ts,
                        f"{stream}/frame/{minute}",
                        obs,
                        f"<{ex}unit>",
                        f"<{ex}c>",
                        None,
                        None,
                    )
                )
    lake = Lake(work / "lake")
    lake.write(batch, batch_id="archive")
    query = compiler.compile(QUERY)
    if not isinstance(query, ContinuousQuery):
        raise TypeError(f"class archive: the sample query compiled to {type(query).__name__}")
    interpreted = list(evaluate(query, lake))
    os.environ["RSP_INTERPRETED_BELOW_ROWS"] = "0"  # the same, compiled to Java
    compiled = list(evaluate(query, lake))
    if [w.to_json() for w in interpreted] != [w.to_json() for w in compiled] or not interpreted:
        raise SystemExit(
            "class archive: the sample query gave different answers interpreted and compiled"
        )


def build(path: Path) -> Path:
    """Run the workload in a driver that writes its classes to ``path`` when its JVM exits."""
    from py4j.protocol import Py4JError

    from rsp_jobs.spark import session

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")
    os.environ["RSP_CLASS_ARCHIVE"] = "off"  # not from an archive that may be stale
    os.environ["RSP_JVM_OPTIONS"] = (
        f"{session.jvm_options()} -XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off"
    )
    with tempfile.TemporaryDirectory(prefix="rsp-class-archive-") as work:
        os.environ.setdefault("RSP_HOME", work)
        spark = session.get_spark()
        _workload(Path(work))
        gateway = spark.sparkContext._gateway
        # the JVM writes the archive as it exits (Python's exit would not wait for it); the
        # connection ends with the JVM
        with contextlib.suppress(Py4JError, OSError):
            spark.sparkContext._jvm.java.lang.System.exit(0)
        gateway.proc.wait(timeout=300)
    if not partial.is_file():
        raise SystemExit(f"class archive: the JVM wrote no archive at {partial}")
    partial.replace(path)
    return path


def main() -> None:
    path = archive_path()
    if path.is_file() and "--force" not in sys.argv:
        return
    print(f"class archive: writing {path}", file=sys.stderr)
    build(path)


if __name__ == "__main__":
    main()
