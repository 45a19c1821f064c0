"""``rsp quarantine``: what the store read but rejected, listed newest first with stream,
file:line, triples and reason, and one part shown with its text as it was read; on SQLite and
PostgreSQL."""
from __future__ import annotations

import json

import pytest

from rsp_jobs.cli import main
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.store.frames import load_batch
from rsp_jobs.store.quarantine import quarantined

XSD_DT = "http://www.w3.org/2001/XMLSchema#dateTime"
BAD_LINE = f'<http://ex.org/a> <http://ex.org/v> "3 "2020-01-01T00:00:07Z"^^<{XSD_DT}> .'
UNKNOWN_TIME = '<http://ex.org/a> <http://ex.org/v> "4" "yesterday" .'


def _load(store, tmp_path, name: str, stream: str, extra: list[str]) -> str:
    lines = [f'<http://ex.org/a> <http://ex.org/v> "{i}" "2020-01-01T00:00:0{i}Z"^^<{XSD_DT}> .' for i in range(3)]
    path = tmp_path / name
    path.write_text("\n".join([*lines[:2], *extra, lines[2]]) + "\n")
    report = load_batch(store, read_stream_file(path, stream))
    assert report.quarantined == len(extra)
    return str(path)


def test_the_rejected_parts_are_listed_newest_first_and_shown_whole(store, store_url, tmp_path, capsys):
    first = _load(store, tmp_path, "one.nq", "http://ex.org/s1", [BAD_LINE])
    second = _load(store, tmp_path, "two.nq", "http://ex.org/s2", [UNKNOWN_TIME, BAD_LINE])

    parts, total = quarantined(store)
    assert total == 3 and [p.where for p in parts] == [f"{second}:3", f"{second}:4", f"{first}:3"]
    capsys.readouterr()
    assert main(["quarantine", "--store", store_url]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 3 and f"<http://ex.org/s2>  {second}:4  1 triple(s): malformed N-Quads line" in lines[1]
    assert "rsp: 3 rejected part(s) quarantined" in err

    assert main(["quarantine", "--store", store_url, "--stream", "http://ex.org/s1", "--json"]) == 0
    (only,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (only["stream"], only["source"], only["line"], only["text"]) == ("http://ex.org/s1", first, 3, BAD_LINE)

    assert main(["quarantine", "--store", store_url, "--limit", "1"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and "the latest 1 of 3 rejected part(s)" in err

    assert main(["quarantine", str(only["id"]), "--store", store_url]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].endswith(f"<http://ex.org/s1>  {first}:3") and shown[-1] == BAD_LINE
    assert shown[1].startswith("1 triple(s) rejected: malformed N-Quads line")


@pytest.mark.parametrize("args, message", [
    (["quarantine", "999"], "no rejected part 999 (rsp quarantine lists them)"),
    (["quarantine", "--limit", "0"], "--limit 0: give 1 or more"),
])
def test_a_part_that_is_not_there_or_a_bad_limit_is_named(store, store_url, capsys, args, message):
    assert main([*args, "--store", store_url]) == 2
    assert message in capsys.readouterr().err
