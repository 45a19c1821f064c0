"""A killed ``rsp evaluate`` leaves nothing behind for long: SIGTERM unwinds and removes its
scratch lake at once; after SIGKILL the next run removes it; a re-run after a kill records one
evaluation activity for its windows, not two, and one ingest activity for its input frames, as a
clean run does, whether the kill came before or after the inputs were stored (issue 15, "Clean
up and tell")."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.exc import DBAPIError

from rsp_jobs.store.models import Activity, ActivityGenerated, Frame, Stream

pytestmark = pytest.mark.spark  # rsp evaluate runs Spark in a subprocess

RSP = str(Path(sys.executable).with_name("rsp"))
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"


FRAMES = 1800


@pytest.fixture
def job(tmp_path):
    return make_job(tmp_path, f"sqlite:///{tmp_path / 'store.sqlite'}")


def make_job(tmp_path: Path, store: str):
    stream = tmp_path / "s.nq"
    # half an hour of frames, so that the run is still evaluating when the test signals it (with
    # 30 s of frames a warm machine could finish between seeing the scratch lake and the signal)
    stream.write_text("".join(f'<http://ex/f{i}> {AT} "2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"^^{DT} .\n'
                              f'<http://ex/a> <http://ex/temp> "{i}" <http://ex/f{i}> .\n' for i in range(FRAMES)))
    query = tmp_path / "q.rsp"
    query.write_text("REGISTER QUERY temps AS SELECT ?s ?t FROM STREAM <http://ex/stream> [RANGE 10s STEP 10s]\n"
                     "WHERE { ?s <http://ex/temp> ?t }\n")
    home = tmp_path / "home"
    args = [RSP, "evaluate", str(query), "--stream", f"http://ex/stream={stream}", "--from", "2024-01-01T00:00:00Z",
            "--to", "2024-01-01T00:30:00Z", "--store", store]
    env = {**os.environ, "RSP_HOME": str(home)}
    return args, env, home, store


def start_and_wait_for_scratch(args, env, home: Path) -> subprocess.Popen:
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(home.glob("evaluate-*")):
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "rsp evaluate never made its scratch lake"
        time.sleep(0.05)
    return process


def evaluations(store: str) -> int:
    with create_engine(store).connect() as conn:
        return conn.scalar(select(func.count()).select_from(Activity).where(Activity.kind == "window_evaluation"))


def test_sigterm_removes_the_scratch_lake_at_once(job):
    args, env, home, _ = job
    process = start_and_wait_for_scratch(args, env, home)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 128 + signal.SIGTERM
    assert list(home.glob("evaluate-*")) == []


def test_after_sigkill_the_next_run_cleans_up_and_records_one_evaluation(job):
    args, env, home, store = job
    process = start_and_wait_for_scratch(args, env, home)
    process.kill()
    process.wait(timeout=60)
    assert len(list(home.glob("evaluate-*"))) == 1  # nothing can clean up after SIGKILL ...
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert list(home.glob("evaluate-*")) == []  # ... but the next run does
    assert evaluations(store) == 1


def ingest_record(store: str) -> tuple[int, int, list[int]]:
    """(ingest activities, the input stream's frames, how many ingest activities generated each
    frame)."""
    engine = create_engine(store)
    try:
        with engine.connect() as conn:
            ingests = conn.scalar(select(func.count()).select_from(Activity).where(Activity.kind == "ingest"))
            frames = conn.scalar(select(func.count()).select_from(Frame).join(Stream, Stream.id == Frame.stream_id)
                                 .where(Stream.iri == "http://ex/stream"))
            per_frame = conn.scalars(
                select(func.count()).select_from(ActivityGenerated)
                .join(Activity, Activity.id == ActivityGenerated.activity_id)
                .where(Activity.kind == "ingest", ActivityGenerated.entity_kind == "frame")
                .group_by(ActivityGenerated.entity_iri)).all()
    finally:
        engine.dispose()
    return ingests, frames, sorted(set(per_frame))


def stored_inputs(store: str) -> bool:
    try:
        return ingest_record(store)[0] > 0
    except DBAPIError:  # the run has not made the schema yet
        return False


def test_a_rerun_after_a_kill_once_the_inputs_were_stored_records_what_a_clean_run_records(tmp_path, store_url):
    args, env, home, store = make_job(tmp_path, store_url)
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while not stored_inputs(store):  # the ingest committed; the evaluation has not
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "rsp evaluate never stored its input frames"
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=60)
    assert evaluations(store) == 0  # killed before its results were written
    assert ingest_record(store) == (1, FRAMES, [1])

    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert evaluations(store) == 1
    assert ingest_record(store) == (1, FRAMES, [1])  # each frame generated by one ingest, as in a clean run
