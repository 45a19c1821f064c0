"""The standalone cluster of ``rsp_jobs.spark.standalone`` as a module-scoped pytest fixture
(import ``spark_cluster`` into a test module to use it); it skips only when Java is missing. A
driver joins it with ``spark_cluster.driver_env()`` in its environment (the shared secret)."""
from __future__ import annotations

from typing import Iterator

import pytest

from rsp_jobs.spark.standalone import Cluster, java_missing, standalone_cluster

__all__ = ["Cluster", "java_missing", "spark_cluster", "standalone_cluster"]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A running standalone cluster for the test module (``.master_url``, ``.status()``)."""
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster
