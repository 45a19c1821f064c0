"""Settings read from the environment, each in one place, with the embedded defaults."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The shared real data (CSRBench, CityBench, DART): ``RSP_DATA_DIR``, default ../shared/data."""
    return Path(os.environ.get("RSP_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


def home_dir() -> Path:
    """The project home: lake, store, Airflow and Spark state live under it (``RSP_HOME``)."""
    path = Path(os.environ.get("RSP_HOME", REPO_ROOT / ".rsp"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def spark_master() -> str:
    """Where Spark jobs run: ``RSP_SPARK_MASTER``, default two local cores."""
    return os.environ.get("RSP_SPARK_MASTER", "local[2]")
