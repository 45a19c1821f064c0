"""Shared fixtures: one SparkSession for the whole run, the real data directory, a project
home per test session; and the test tiers.

Markers come from the fixtures a test uses (``spark``, ``data``, ``postgres``, ``airflow``,
``cluster``) or are set by its module (a test that starts Spark or Airflow in a subprocess, or
runs a Great Expectations validation: ``gx``). ``make test-fast`` deselects them all; under it
(``RSP_TEST_TIER=fast``) a test that starts Spark or imports GX in this process anyway fails,
naming the marker it lacks."""
from __future__ import annotations

import importlib.abc
import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("RSP_HOME", tempfile.mkdtemp(prefix="rsp-test-home-"))
# tests drop landing files whole and load them at once; those of a file still being written set
# their own quiet period (tests/robustness/test_landing_in_pieces.py)
os.environ.setdefault("RSP_LANDING_QUIET", "0")
# the suite runs on its own settings, whatever a developer put in the project's rsp.toml
# (tests/test_settings_file.py gives each of its processes a file of its own)
os.environ.setdefault("RSP_SETTINGS", "none")

from rsp_jobs import settings  # noqa: E402
from rsp_jobs.orchestrate import airflow_env  # noqa: E402

airflow_env.configure()  # before anything imports Airflow: its home and database under RSP_HOME


# fixture -> the marker a test that uses it gets
FIXTURE_MARKERS = {"spark": "spark", "data_dir": "data", "airflow": "airflow", "airflow_db": "airflow",
                   "queries": "airflow", "spark_cluster": "cluster", "csrbench_batch": "data"}
COSTLY = ("cluster", "airflow", "slow", "spark")  # markers, costliest first


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture in item.fixturenames:
            if fixture in FIXTURE_MARKERS:
                item.add_marker(FIXTURE_MARKERS[fixture])
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in params.values():  # a fixture named by a parameter (request.getfixturevalue)
            if isinstance(value, str) and value in FIXTURE_MARKERS:
                item.add_marker(FIXTURE_MARKERS[value])
        if str(params.get("store_url", "")).startswith("postgresql") or params.get("backend") == "postgresql":
            item.add_marker("postgres")
    # the costly modules first, so that the workers of ``make test`` (pytest-xdist, a module to a
    # worker) start on them and the run does not end waiting for one of them
    weight = {}
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        rank = next((i for i, mark in enumerate(COSTLY) if mark in marks), len(COSTLY))
        weight[item.module] = min(weight.get(item.module, rank), rank)
    items.sort(key=lambda item: weight[item.module])  # stable: a module's tests keep their order


if os.environ.get("RSP_TEST_TIER") == "fast":
    from pyspark.sql.session import SparkSession

    def _no_spark_in_the_fast_tier(*_args, **_kwargs):
        raise RuntimeError("this test starts Spark: give it the `spark` fixture or mark it "
                           "`pytest.mark.spark`, so that `make test-fast` leaves it out")

    SparkSession.Builder.getOrCreate = _no_spark_in_the_fast_tier

    class _NoGreatExpectations(importlib.abc.MetaPathFinder):
        """Importing GX alone takes 10-15 s on two cores: a validation is not for the edit loop."""

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "great_expectations":
                raise ImportError("this test runs a Great Expectations validation: mark it "
                                  "`pytest.mark.gx`, so that `make test-fast` leaves it out")
            return None

    sys.meta_path.insert(0, _NoGreatExpectations())


@pytest.fixture(scope="session")
def spark():
    from rsp_jobs.spark.session import get_spark

    return get_spark()


@pytest.fixture(scope="module", autouse=True)
def _release_spark_memory(request):
    """One JVM serves the whole suite: after each module, free what it left there. With
    RSP_TEST_HEAP_LOG set, append the module and the driver's used heap (MB) to that file."""
    yield
    from rsp_jobs.spark.session import release_memory

    used = release_memory()
    log = os.environ.get("RSP_TEST_HEAP_LOG")
    if log and used is not None:
        with open(log, "a") as out:
            out.write(f"{request.module.__name__} {used // 2**20}\n")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh project home and SQLite store for one test (Airflow's home stays the session's)."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("RSP_HOME", str(path))
    monkeypatch.setenv("RSP_STORE_URL", f"sqlite:///{path / 'store.sqlite'}")
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = settings.data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set RSP_DATA_DIR to ../shared/data)")
    return path
