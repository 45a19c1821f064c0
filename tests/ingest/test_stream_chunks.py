"""A large N-Quads file goes into the lake in chunks of whole frames: the lake's rows, the counts
and the rejections are those of reading it whole (several graphs at one time far apart in the
file, timestamped triples, repeats, malformed lines, a frame split over two files), and the
reader's peak memory does not follow the file's size."""
from __future__ import annotations

import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.dataset as pads
import pytest

from rsp_jobs.ingest.lake import Lake, load_files
from rsp_jobs.ingest.rdf_stream import read_stream_chunks

STREAM = "http://ex.org/streams/chunks"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def at(second: int) -> str:
    return f'"2024-01-01T00:{second // 60 % 60:02d}:{second % 60:02d}Z"^^{DT}'


def mixed(first: int, count: int) -> str:
    """Frames in both forms, with what the reader must keep together or reject."""
    lines = []
    for i in range(first, first + count):
        lines += [f"<http://ex.org/f/{i}> {AT} {at(i)} .",
                  f'<http://ex.org/s> <http://ex.org/v> "{i}" <http://ex.org/f/{i}> .',
                  f'<http://ex.org/s> <http://ex.org/v> "{i}" <http://ex.org/f/{i}> .',  # a repeat
                  f'<http://ex.org/s> <http://ex.org/w> "{i % 7}" {at(i)} .']  # the same time, another part
        if i % 50 == 0:
            lines += ["not a triple", f'<http://ex.org/x> <http://ex.org/y> "outside" .']
    # parts of early times at the end of the file: their frames wait for them
    lines += [f'<http://ex.org/late> <http://ex.org/v> "late" <http://ex.org/g/{first}> .',
              f"<http://ex.org/g/{first}> {AT} {at(first)} .",
              f'<http://ex.org/s> <http://ex.org/z> "z" {at(first + 1)} .',
              f"<http://ex.org/two> {AT} {at(1)} .", f"<http://ex.org/two> {AT} {at(2)} .",
              f'<http://ex.org/s> <http://ex.org/v> "two times" <http://ex.org/two> .']
    return "\n".join(lines) + "\n"


def lake_rows(root: Path) -> Counter:
    table = pads.dataset(str(root), format="parquet", partitioning="hive").to_table()
    return Counter(zip(*(table.column(c).to_pylist() for c in ("ts", "frame", "s", "p", "o", "seq", "hour"))))


def test_a_file_read_in_chunks_fills_the_lake_as_one_read_whole(tmp_path, monkeypatch):
    one, two = tmp_path / "one.nq", tmp_path / "two.nq"
    one.write_text(mixed(0, 400))
    two.write_text(mixed(390, 30))  # overlaps the first file's last times: those frames span both
    files = [(STREAM, one), (STREAM, two)]
    monkeypatch.setenv("RSP_STREAM_CHUNK_BYTES", str(1 << 30))
    whole = load_files(Lake(tmp_path / "whole"), files)
    monkeypatch.setenv("RSP_STREAM_CHUNK_BYTES", "2000")
    assert len(list(read_stream_chunks(one, STREAM))) > 10  # read in many chunks indeed
    chunked = load_files(Lake(tmp_path / "chunked"), files)

    assert lake_rows(tmp_path / "chunked") == lake_rows(tmp_path / "whole")
    for a, b in zip(whole, chunked):
        assert (a.accepted, a.repeated, a.rejected_triples) == (b.accepted, b.repeated, b.rejected_triples)
        assert Counter(map(str, a.rejections)) == Counter(map(str, b.rejections))
    first = whole[0]
    read = sum(1 for line in one.read_text().splitlines() if AT not in line)  # every triple statement
    assert read == first.accepted + first.repeated + first.rejected_triples  # the counts balance


INGEST = """
import resource, sys
from pathlib import Path
from rsp_jobs.ingest.lake import Lake, load_files
load_files(Lake(sys.argv[2]), [("http://ex.org/streams/chunks", Path(sys.argv[1]))])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_mb(path: Path, lake: Path) -> float:
    """Peak resident memory (MB) of a process that loads ``path`` into a lake, and no more: its
    own maximum, as this process's children's maximum also counts whatever ran before (a JVM)."""
    done = subprocess.run([sys.executable, "-c", INGEST, str(path), str(lake)], check=True, timeout=600,
                          capture_output=True, text=True,
                          env={"RSP_STREAM_CHUNK_BYTES": str(1 << 20), "PATH": "/usr/bin:/bin"})
    return int(done.stdout.split()[-1]) / 1024


def frames_file(path: Path, frames: int) -> int:
    with path.open("w") as out:
        for i in range(frames):
            out.write(f"<http://ex.org/f/{i}> {AT} \"2024-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z\"^^{DT} .\n"
                      + "".join(f'<http://ex.org/s{k}> <http://ex.org/p{k}> "{(i * k) % 1000}" <http://ex.org/f/{i}> .\n'
                                for k in range(50)))
    return path.stat().st_size


@pytest.mark.slow  # two processes read 4 and 40 MB
def test_peak_memory_of_a_chunked_read_grows_by_less_than_the_file(tmp_path):
    small = frames_file(tmp_path / "small.nq", 1200)
    large = frames_file(tmp_path / "large.nq", 12000)
    base = peak_rss_mb(tmp_path / "small.nq", tmp_path / "lake-small")
    peak = peak_rss_mb(tmp_path / "large.nq", tmp_path / "lake-large")
    grown, more = peak - base, (large - small) / 2**20
    # read whole, the peak grew by ten times the input's growth (the file held in Python); in
    # chunks it grows by less than the input: what stays between chunks is a few values per
    # frame (its graph, time and last line, the frame each time names across files) and what
    # the allocators keep of the chunks written, about 3 KB a frame of 50 triples here
    assert grown < more, \
        f"peak {base:.0f} MB -> {peak:.0f} MB for {more:.0f} MB more input"
