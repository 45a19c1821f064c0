"""A full file system under the lake: the write fails with one clear error, no part file is left
half-written where readers look (which would fail every later read of the stream with "Parquet
magic bytes not found"), the batch's earlier parts stay readable, and the same load succeeds
once there is room.

The file system is a real one: a 2 MiB tmpfs mounted for the test (root can mount here); where
mounting is not permitted the tests are skipped, saying so."""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select

from rsp_jobs.errors import StorageError
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import ingest_landing
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.store import db
from rsp_jobs.store.models import Frame, IngestedFile

STREAM = "http://ex.org/streams/full"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
RSP = str(Path(sys.executable).with_name("rsp"))


@pytest.fixture
def small_disk(tmp_path, request) -> Path:
    """A mounted tmpfs (2 MiB, or the size the test is parametrized with), unmounted afterwards."""
    size = getattr(request, "param", "2m")
    mount = tmp_path / "small"
    mount.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot make a small file system")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root or CAP_SYS_ADMIN): {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def stream_text(frames: int, first: int = 0) -> str:
    """Frames whose literals do not compress, so that their Parquet is about as large as the text."""
    return "".join(f'<http://ex.org/f/{i}> {AT} "2024-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"^^{DT} .\n'
                   f'<http://ex.org/s> <http://ex.org/v> "{base64.b32encode(os.urandom(100)).decode()}" '
                   f'<http://ex.org/f/{i}> .\n' for i in range(first, first + frames))


def fill(folder: Path, leave: int) -> Path:
    """A file that takes all of ``folder``'s file system but ``leave`` bytes."""
    filler = folder / "filler"
    free = shutil.disk_usage(folder).free
    filler.write_bytes(b"\0" * max(0, free - leave))
    return filler


def lake_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_a_lake_write_onto_a_full_disk_leaves_no_partial_part(small_disk, tmp_path):
    lake = Lake(small_disk / "lake")
    source = tmp_path / "s.nq"
    source.write_text(stream_text(10))
    earlier = read_stream_file(source, STREAM)
    assert lake.write(earlier, batch_id="b1") == 10
    before = lake_files(lake.root)

    source.write_text(stream_text(20_000))  # about 3 MB of Parquet: more than the disk holds
    with pytest.raises(StorageError, match=rf"^cannot write the lake {lake.root}: No space left on device$"):
        lake.write(read_stream_file(source, STREAM), batch_id="b1")

    assert lake_files(lake.root) == before  # nothing staged is left, the earlier load is whole
    assert sum(pq.read_metadata(p).num_rows for p in before) == 10
    stats = LakeStatistics(lake)
    assert stats.rows([STREAM]) == 10 and len(stats.times([STREAM])) == 10


@pytest.mark.gx  # the landing file passes the input gate once there is room
@pytest.mark.parametrize("small_disk", ["32m"], indirect=True)  # room for the quality gate's Data Docs
def test_ingest_onto_a_full_disk_keeps_the_landing_file_and_loads_it_once_there_is_room(home, small_disk,
                                                                                       monkeypatch, data_dir):
    monkeypatch.setenv("RSP_HOME", str(small_disk))  # lake and landing on the small disk, the store beside
    landing = registry.stream_config(STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    dropped = landing / "a-0001.nq"
    dropped.write_text(stream_text(2000))
    filler = fill(small_disk, leave=100_000)

    with pytest.raises(OSError, match="No space left on device"):  # the lake's, or the quality docs' first
        ingest_landing(STREAM)
    assert dropped.is_file()  # not loaded, not rejected: the next run takes it again
    assert not (landing / "rejected").exists()
    assert [p for p in lake_files(small_disk / "lake")] == []
    engine = db.engine()
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Frame)) == 0
        assert conn.scalar(select(func.count()).select_from(IngestedFile)) == 0

    filler.unlink()
    report = ingest_landing(STREAM).files[0]
    assert (report.status, report.frames, report.triples, report.quarantined) == ("loaded", 2000, 2000, 0)
    lake = Lake(small_disk / "lake")
    stats = LakeStatistics(lake)
    assert stats.rows([STREAM]) == 2000 and len(stats.times([STREAM])) == 2000
    assert (landing / "loaded" / "a-0001.nq").is_file()


@pytest.mark.slow  # two rsp processes
def test_rsp_evaluate_onto_a_full_disk_says_so_in_one_line(small_disk, tmp_path):
    source = tmp_path / "s.nq"
    source.write_text(stream_text(20_000))
    query = tmp_path / "q.rsp"
    query.write_text("REGISTER QUERY q AS SELECT ?o FROM STREAM <http://ex.org/streams/full> [RANGE 10s STEP 10s]\n"
                     "WHERE { ?s <http://ex.org/v> ?o }\n")
    env = {**os.environ, "RSP_HOME": str(small_disk / "home")}
    for lake in ([], ["--lake", str(small_disk / "kept")]):  # the scratch lake, and a kept one
        done = subprocess.run([RSP, "evaluate", str(query), "--stream", f"{STREAM}={source}", *lake],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr  # one line, no traceback
        assert done.stderr.startswith("rsp: error: cannot write the lake ") and "No space left on device" in done.stderr
    assert [p for p in small_disk.rglob("*.parquet")] == []
