"""The demo's local Airflow deployment (``rsp demo``, ``rsp_jobs/demo.py``), which the end-to-end
tests start too: the four components that ``make airflow`` runs (``airflow_env.start``), with
the project environment, in a throwaway project home, on a free port, and with parsing and
scheduling intervals of a second or two instead of production's minutes so that a DAG file is a
DAG and a triggered run is running within seconds.

It stays in the package, not in ``tests/support/``, because ``rsp demo`` is a user command that
needs it; it is not how production runs Airflow (``make airflow``, ``docker/``), hence its name.

    with airflow_deployment(tmp_path) as airflow:
        airflow.client.get("/api/v2/dags").json()

When the body of the ``with`` fails, the components' logs and the task logs are printed before
everything is stopped (SIGTERM, then SIGKILL, to each component's process group, then SIGKILL to
any process left in the components' sessions, task processes included: ``airflow_env.stop``).
It is as private as ``make airflow``: its Connect server asks for a token, every listener is on
loopback, and what it writes is its owner's only.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

from rsp_jobs import settings
from rsp_jobs.orchestrate import airflow_env
from rsp_jobs.spark import connect_server

T = TypeVar("T")

# A new DAG file is found within 2 s and parsed at once; a changed one is re-parsed after 2 min
# only, because parsing the DAG factory takes seconds of CPU that the tasks' Spark jobs need.
FAST = {
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "2",
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "120",
    "AIRFLOW__DAG_PROCESSOR__PRINT_STATS_INTERVAL": "300",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
    "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2",
    "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
}


@dataclass
class Deployment:
    url: str
    env: dict[str, str]
    user: str
    password: str
    client: httpx.Client  # logged in: every request carries the user's bearer token
    processes: dict  # component name -> subprocess.Popen (the Connect server as "spark-connect")
    spark_connect: str | None = None  # the Connect server's client URL, its token in it

    @property
    def sessions(self) -> set[int]:
        """The sessions of its processes: each component leads one (``airflow_env.stop``)."""
        return {process.pid for process in self.processes.values()}

    @property
    def logs(self) -> Path:
        return Path(self.env["AIRFLOW_HOME"]) / "logs"

    def login(self, user: str, password: str) -> httpx.Response:
        """``POST /auth/token`` of the simple auth manager: 201 with ``access_token``, or 401."""
        return httpx.post(f"{self.url}/auth/token", json={"username": user, "password": password})

    def wait_for(self, probe: Callable[[], T | None], timeout: float, what: str) -> T:
        """Poll ``probe`` every second until it returns something truthy; fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        while not (result := probe()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout:.0f} s")
            time.sleep(1)
        return result

    def log_tails(self, lines: int = 60) -> str:
        """The last lines of every component, DAG-processor and task log."""
        parts = []
        for path in sorted(self.logs.rglob("*.log"), key=lambda p: p.stat().st_mtime):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"===== {path.relative_to(self.logs)}\n" + "\n".join(tail))
        return "\n".join(parts)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deployment_environment(home: Path, overrides: Mapping[str, str] = {}) -> dict[str, str]:
    """This process's environment without its Airflow settings, plus the project's for ``home``
    with ``FAST`` intervals, free ports and ``overrides``."""
    given = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RSP_AIRFLOW"))}
    given.update(
        FAST,
        RSP_HOME=str(home),
        AIRFLOW__API__PORT=str(free_port()),
        # the log servers of the scheduler and triggerer: free ports, for parallel deployments
        AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=str(free_port()),
        AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT=str(free_port()),
        **overrides,
    )
    return {**given, **airflow_env.environment(home, given)}


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def airflow_deployment(
    home: Path,
    overrides: Mapping[str, str] = {},
    timeout: float = 180.0,
    spark_master: str = settings.DEFAULT_SPARK_MASTER,
) -> Iterator[Deployment]:
    """Migrate, start the components, wait until ``/api/v2/monitor/health`` says all are healthy,
    log in; yield the deployment; stop every component (and the tasks they started).
    ``overrides``: Airflow settings for this deployment, e.g. another ``AIRFLOW__CORE__DAGS_FOLDER``;
    unless they name the tasks' Spark (``AIRFLOW_CONN_RSP_SPARK``), a Spark Connect server on
    ``spark_master`` (a cluster's URL, or local) serves the tasks."""
    env = deployment_environment(home, overrides)
    airflow_env.migrate(env)
    password = secrets.token_urlsafe(12)
    airflow_env.ensure_password(env, password)
    url = f"http://localhost:{env['AIRFLOW__API__PORT']}"
    processes: dict[str, subprocess.Popen] = {}
    deployment = Deployment(
        url,
        env,
        env["RSP_AIRFLOW_USER"],
        password,
        httpx.Client(base_url=url, timeout=30),
        processes,
    )
    # pytest dies on SIGTERM without cleaning up, and the components, in their own process
    # groups, would outlive it: a KeyboardInterrupt instead runs the ``finally`` below
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main_thread else None
    try:
        # the tasks' Spark: a Connect server, warm for every task
        if not env.get("AIRFLOW_CONN_RSP_SPARK"):
            port = free_port()
            token = airflow_env.ensure_connect_token(env)
            processes["spark-connect"] = connect_server.start(
                port,
                deployment.logs / "spark-connect.log",
                master=spark_master,
                home=home,
                token=token,
                env=env,
                umask=airflow_env.UMASK,
            )
            # an environment variable, not a command line: only this user's processes can read it
            env["AIRFLOW_CONN_RSP_SPARK"] = json.dumps(
                {"conn_type": "spark_connect", "host": "localhost", "port": port, "password": token}
            )
            deployment.spark_connect = connect_server.url(port, token)
        processes.update(airflow_env.start(env, deployment.logs))

        def healthy() -> bool:
            if dead := [name for name, p in processes.items() if p.poll() is not None]:
                raise RuntimeError(f"Airflow {', '.join(dead)} exited")
            return airflow_env.healthy(url)

        deployment.wait_for(healthy, timeout, "Airflow healthy")
        token = (
            deployment.login(deployment.user, password).raise_for_status().json()["access_token"]
        )
        deployment.client.headers["Authorization"] = f"Bearer {token}"
        yield deployment
    except Exception:
        print(deployment.log_tails(), file=sys.stderr)
        raise
    finally:
        deployment.client.close()
        airflow_env.stop(processes.values())
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
