"""A landing file copied into the folder in pieces is taken only once it is whole: while it is
being written the ingest leaves it (and the sensor's trigger does not fire); a file that changes
while it is read is neither loaded nor marked loaded, and the next run loads all of it. Every
frame is stored once, and the counts balance."""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from rsp_jobs.ingest.lake import project_lake
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import ingest_landing, loadable_suffixes
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.store import db
from rsp_jobs.store.models import Frame, IngestedFile

STREAM = "http://ex.org/streams/pieces"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
FRAMES = 300


def frames_text(first: int, last: int) -> str:
    return "".join(f'<http://ex.org/f/{i}> {AT} "2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"^^{DT} .\n'
                   f'<http://ex.org/s> <http://ex.org/v> "{i}" <http://ex.org/f/{i}> .\n' for i in range(first, last))


def write_in_pieces(path: Path, pieces: int, pause: float) -> threading.Thread:
    """Append the stream's frames to ``path`` (its final name) in ``pieces``, ``pause`` apart."""
    def run():
        step = FRAMES // pieces
        for k in range(pieces):
            with path.open("a") as out:
                out.write(frames_text(k * step, (k + 1) * step))
            time.sleep(pause)

    writer = threading.Thread(target=run)
    writer.start()
    return writer


def stored(engine) -> tuple[int, int]:
    with engine.connect() as conn:
        return (conn.scalar(select(func.count()).select_from(Frame)),
                conn.scalar(select(func.count()).select_from(IngestedFile)))


def assert_loaded_whole(report, landing: Path) -> None:
    assert (report.status, report.frames, report.triples, report.duplicates, report.quarantined) == \
        ("loaded", FRAMES, FRAMES, 0, 0)
    assert stored(db.engine()) == (FRAMES, 1)
    stats = LakeStatistics(project_lake())
    assert len(stats.times([STREAM])) == FRAMES and stats.rows([STREAM]) == FRAMES
    assert (landing / "loaded" / "a.nq").read_text() == frames_text(0, FRAMES)
    assert not (landing / "a.nq").exists()


@pytest.mark.gx  # the whole file passes the input gate
def test_a_file_written_in_pieces_is_loaded_once_whole(home, data_dir, monkeypatch, caplog):
    monkeypatch.setenv("RSP_LANDING_QUIET", "1.5")
    landing = registry.stream_config(STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    writer = write_in_pieces(landing / "a.nq", pieces=6, pause=0.4)
    polls, reports = 0, []
    caplog.set_level(logging.INFO, logger="rsp.ingest")
    while writer.is_alive() or not reports or reports[-1].status != "loaded":  # poll as the sensor would
        files = ingest_landing(STREAM).files
        polls += 1
        if files:
            reports.append(files[0])
        assert polls < 200, [r.status for r in reports]
        time.sleep(0.2)
    writer.join()
    assert polls > 1 and {r.status for r in reports[:-1]} == {"waiting"}  # seen, and left, while written
    assert "a.nq: modified less than 1.5 s ago, still being written: left for the next run" in caplog.text
    assert_loaded_whole(reports[-1], landing)


@pytest.mark.gx
def test_a_file_that_grows_while_it_is_read_is_not_marked_loaded(home, data_dir, monkeypatch, caplog):
    from rsp_jobs.quality import gate

    landing = registry.stream_config(STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    path = landing / "a.nq"
    path.write_text(frames_text(0, FRAMES // 2))
    old = path.stat().st_mtime - 60
    os.utime(path, (old, old))  # quiet for a minute: the producer paused longer than the quiet period
    check = gate.check_input_batch

    def check_then_append(*args, **kwargs):  # the producer's next piece arrives while the ingest works
        outcome = check(*args, **kwargs)
        with path.open("a") as out:
            out.write(frames_text(FRAMES // 2, FRAMES))
        return outcome

    monkeypatch.setattr(gate, "check_input_batch", check_then_append)
    caplog.set_level(logging.INFO, logger="rsp.ingest")
    (report,) = ingest_landing(STREAM).files
    assert report.status == "waiting" and "changed while it was read" in report.reason
    assert "a.nq: changed while it was read" in caplog.text and "left for the next run" in caplog.text
    assert path.is_file() and not (landing / "loaded").exists()
    assert stored(db.engine()) == (0, 0)  # the store rolled back ...
    assert LakeStatistics(project_lake()).rows([STREAM]) == 0  # ... and so did the lake

    monkeypatch.setattr(gate, "check_input_batch", check)
    (report,) = ingest_landing(STREAM).files
    assert_loaded_whole(report, landing)


@pytest.mark.airflow  # imports Airflow's trigger and sensor classes
def test_the_landing_trigger_fires_only_once_the_file_is_whole(home, monkeypatch):
    from rsp_jobs.orchestrate.landing_wait import LandingSensor, LandingTrigger, arriving_files, waiting_files

    monkeypatch.setenv("RSP_LANDING_QUIET", "1")
    config = registry.stream_config(STREAM)
    landing = config.landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    (landing / ".b.nq").write_text(frames_text(0, 1))  # a temporary name: never taken
    suffixes = loadable_suffixes(config)
    trigger = LandingTrigger(str(landing), suffixes, poll_seconds=0.1, quiet_seconds=1.0)
    assert trigger.serialize()[1]["quiet_seconds"] == 1.0

    async def first_event():
        return await asyncio.wait_for(trigger.run().__anext__(), timeout=60)

    writer = write_in_pieces(landing / "a.nq", pieces=5, pause=0.3)
    while not (landing / "a.nq").exists():
        time.sleep(0.01)
    assert arriving_files(landing, suffixes) == ["a.nq"] and waiting_files(landing, suffixes, 1.0) == []
    sensor = LandingSensor(task_id="wait", stream=STREAM)
    assert sensor.poke({}) is False  # the sensor in poke mode waits too
    event = asyncio.run(first_event())
    fired = time.time()
    writer.join()
    assert event.payload == {"folder": str(landing), "files": ["a.nq"]}
    assert fired - (landing / "a.nq").stat().st_mtime >= 1.0  # after the last piece, by the quiet period
    assert sensor.poke({}) is True
