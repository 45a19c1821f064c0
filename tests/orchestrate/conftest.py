"""Orchestration fixtures: a project home per test (lake, store, landing directories), the
registered queries (the repository's or a copy to change), hours of real CityBench traffic as
landing files, and Airflow's metadata database for real DAG runs."""
from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rsp_jobs import settings
from rsp_jobs.ingest import citybench
from rsp_jobs.orchestrate import airflow_env, registry
from rsp_jobs.orchestrate.ingest import drop

TRAFFIC = str(citybench.TRAFFIC)
DAY = datetime(2014, 8, 2, 6, 0, tzinfo=timezone.utc)


@pytest.fixture
def queries(tmp_path, monkeypatch) -> Path:
    """A copy of the registered queries that a test may change."""
    path = tmp_path / "queries"
    shutil.copytree(settings.REPO_ROOT / "queries", path)
    monkeypatch.setenv("RSP_QUERIES_DIR", str(path))
    return path


@pytest.fixture(scope="session")
def traffic(data_dir, tmp_path_factory):
    """``traffic(start_minute, end_minute)``: a file of the 33 merged traffic streams between
    06:00 + start and 06:00 + end on 2014-08-02 (cached)."""
    folder = tmp_path_factory.mktemp("traffic")

    def make(start: int, end: int) -> Path:
        path = folder / f"traffic-{start:04d}-{end:04d}.nq"
        if not path.exists():
            citybench.merged_traffic(DAY + timedelta(minutes=start), DAY + timedelta(minutes=end), path)
        return path
    return make


def land(path: Path, stream: str = TRAFFIC, name: str | None = None) -> Path:
    """Drop a file in the stream's landing directory."""
    return drop(path, registry.stream_config(stream), name)


@pytest.fixture(scope="session")
def airflow_db():
    """Airflow's metadata database (SQLite under the session's project home), migrated once."""
    env = airflow_env.environment()
    airflow_env.migrate(env)
    from airflow import settings as airflow_settings

    airflow_settings.configure_orm()
    return env
