"""Airflow's LocalExecutor, with the modules every task needs imported before its workers start.

In Airflow 3 the LocalExecutor's workers are ``multiprocessing`` forks of the scheduler, and
each task process is an ``os.fork()`` of a worker (``airflow.sdk.execution_time.supervisor``).
What the scheduler has imported by then, every task process starts with. A task of ours
imports the task module (pandas, pyarrow, SQLAlchemy, pyspark) and, to check its batch, Great
Expectations (scipy, altair, pyspark.ml: 3-7 s on two cores) anew in each process otherwise:
``python -m rsp_jobs.bench.task_cost`` measures both. Nothing is started here: no Spark
session, no database connection, no thread; the modules are only imported (as a DAG file's
imports are, in the process that parses it).
"""

from __future__ import annotations

import importlib
import logging

from airflow.executors.local_executor import LocalExecutor

# what a task imports, heaviest last: validate first, since it turns GX's usage statistics off
PRELOADED = (
    "rsp_jobs.orchestrate.tasks",
    "rsp_jobs.quality.validate",
    "great_expectations",
    "great_expectations.checkpoint",
    "rsp_jobs.quality.suites",
)

log = logging.getLogger(__name__)


def preload(modules=PRELOADED) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # a task that needs it fails with the real error, in its own log
            log.warning("could not preload %s for the tasks", name, exc_info=True)


class PreloadingLocalExecutor(LocalExecutor):
    """``LocalExecutor`` whose workers, and so every task process, start with ``PRELOADED``."""

    def start(self) -> None:
        preload()
        super().start()
