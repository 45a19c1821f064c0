"""The deployment's executor: Airflow loads ours from the settings ``make airflow`` writes, and
its preload names what cannot be imported without failing the scheduler (a task that needs
the module then fails with the real error)."""
from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from rsp_jobs.orchestrate import airflow_env

pytestmark = pytest.mark.airflow

CHECK = r"""
import os, sys
from airflow.executors.executor_loader import ExecutorLoader
cls, _ = ExecutorLoader.import_default_executor_cls()
print(cls.__module__, cls.__name__, "great_expectations" in sys.modules)
"""


def test_airflow_loads_the_preloading_executor_from_the_deployment_settings(tmp_path):
    env = airflow_env.environment(tmp_path / "home")
    done = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # loading the class imports nothing heavy: only its start() (in the scheduler) preloads
    assert done.stdout.split()[-3:] == ["rsp_jobs.orchestrate.executor", "PreloadingLocalExecutor", "False"]


def test_a_module_that_cannot_be_preloaded_is_named_and_the_rest_still_load():
    from rsp_jobs.orchestrate.executor import log, preload

    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    log.addHandler(handler)
    sys.modules.pop("colorsys", None)
    try:
        preload(("rsp_jobs.no_such_module", "colorsys"))
    finally:
        log.removeHandler(handler)
    assert said == ["could not preload rsp_jobs.no_such_module for the tasks"] and "colorsys" in sys.modules
