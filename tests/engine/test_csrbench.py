"""CSRBench (Dell'Aglio et al., ISWC 2013): the seven C-SPARQL queries, run through
`rsp evaluate` on the benchmark's stream, give exactly the published answers under C-SPARQL's
reporting policy (window close, non-empty content, RSTREAM), compared as sets per window."""
from __future__ import annotations

import json

import pytest

from rsp_jobs.cli import main
from rsp_jobs.ingest import csrbench
from rsp_jobs.results import WindowResult


@pytest.fixture(scope="module")
def csrbench_stream_file(data_dir, tmp_path_factory):
    return csrbench.write_stream(tmp_path_factory.mktemp("csrbench") / "stream.nq")


@pytest.mark.parametrize("name", csrbench.QUERIES)
def test_csrbench_query_gives_the_published_answers(name, csrbench_stream_file, tmp_path, spark):
    out = tmp_path / f"{name}.jsonl"
    code = main(["evaluate", str(csrbench.query_path(name)),
                 "--stream", f"{csrbench.STREAM}={csrbench_stream_file}", "--output", str(out)])
    assert code == 0
    windows = [WindowResult.from_json(json.loads(line), "SELECT") for line in out.read_text().splitlines()]
    assert csrbench.answers_of(windows) == csrbench.expected_answers(name)
