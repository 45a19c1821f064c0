"""What the local deployment exposes and leaves behind, on a real one (the components that
``make airflow`` and ``rsp demo`` run, and their Connect server): every socket its processes
listen on is on loopback, what it writes is readable by its owner only, and once it is stopped no
process of it is left, a task whose scheduler was killed under it included.

Its one DAG runs a task that reaches the Connect server through the ``rsp_spark`` connection
(so with the token), runs a Python function there, and then stays, ignoring SIGTERM as a task
blocked in a long native call does."""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import stat
from contextlib import ExitStack, suppress
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest

from rsp_jobs.demo_deployment import Deployment, airflow_deployment
from rsp_jobs.orchestrate import airflow_env

pytestmark = pytest.mark.airflow

DAG = '''
import json, os, signal, time
from datetime import datetime
from pathlib import Path

from airflow.sdk import dag, task


@dag(schedule=None, start_date=datetime(2024, 1, 1), catchup=False)
def stays():
    @task
    def stay():
        from pyspark.sql import functions as F
        from rsp_jobs.orchestrate.spark_connection import get_spark

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        spark = get_spark()
        plus_one = F.udf(lambda x: x + 1, "long")
        total = sum(row[0] for row in spark.range(3).select(plus_one("id")).collect())
        Path(os.environ["RSP_HOME"], "task.json").write_text(json.dumps({"pid": os.getpid(), "total": total}))
        time.sleep(3600)
    stay()


stays()
'''


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """The deployment with its task running (the task's pid and what its Spark job returned), and
    the stack that stops it."""
    dags = tmp_path_factory.mktemp("dags")
    (dags / "stays.py").write_text(DAG)
    home = tmp_path_factory.mktemp("deployment") / "home"
    with ExitStack() as stack:
        deployment = stack.enter_context(airflow_deployment(home, {"AIRFLOW__CORE__DAGS_FOLDER": str(dags)}))
        deployment.wait_for(lambda: deployment.client.get("/api/v2/dags/stays").status_code == 200, 120,
                            "the DAG parsed")
        deployment.client.patch("/api/v2/dags/stays", json={"is_paused": False}).raise_for_status()
        deployment.client.post("/api/v2/dags/stays/dagRuns", json={
            "dag_run_id": "stay", "logical_date": datetime.now(timezone.utc).isoformat()}).raise_for_status()
        told = home / "task.json"

        def ran() -> bool:
            state = deployment.client.get("/api/v2/dags/stays/dagRuns/stay").raise_for_status().json()["state"]
            assert state in ("queued", "running"), f"the run is {state}"
            return told.exists() and bool(told.read_text())
        deployment.wait_for(ran, 300, "the task ran its Spark job")
        yield deployment, json.loads(told.read_text()), stack


def processes_of(deployment: Deployment) -> list[psutil.Process]:
    """The components, every descendant of theirs, and whatever else is in their sessions."""
    found = {}
    for popen in deployment.processes.values():
        with suppress(psutil.NoSuchProcess):
            top = psutil.Process(popen.pid)
            for process in (top, *top.children(recursive=True)):
                found[process.pid] = process
    for process in airflow_env.in_sessions(deployment.sessions):
        found[process.pid] = process
    return list(found.values())


def test_its_task_reaches_the_connect_server_with_the_token_of_its_connection(running):
    deployment, task, _ = running
    assert task["total"] == 1 + 2 + 3
    token = deployment.spark_connect.split("token=", 1)[1]
    assert "token" in deployment.spark_connect and token
    assert stat.S_IMODE((Path(deployment.env["AIRFLOW_HOME"]) / airflow_env.CONNECT_TOKEN_FILE).stat().st_mode) == 0o600
    for process in processes_of(deployment):  # on no command line; in no log
        with suppress(psutil.Error):
            assert token not in " ".join(process.cmdline()), process.cmdline()
    for log in deployment.logs.rglob("*.log"):
        assert token not in log.read_text(errors="replace"), log


def test_every_socket_it_listens_on_is_on_loopback(running):
    deployment, task, _ = running
    listening = []
    for process in processes_of(deployment):
        with suppress(psutil.Error):
            listening += [(process.name(), c.laddr.ip, c.laddr.port)
                          for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    ports = {port for _, _, port in listening}
    api = int(deployment.env["AIRFLOW__API__PORT"])
    connect = int(deployment.spark_connect.split(":")[2].split("/")[0])
    assert {api, connect} <= ports, listening  # the check sees the deployment's listeners
    assert [entry for entry in listening if unmapped(entry[1]) not in ("127.0.0.1", "::1")] == [], listening


def unmapped(ip: str) -> str:
    """An IPv4 address as an IPv6 socket shows it (``::ffff:127.0.0.1``, a JVM's) as IPv4."""
    address = ipaddress.ip_address(ip)
    return str(getattr(address, "ipv4_mapped", None) or address)


def test_what_it_writes_is_readable_by_its_owner_only(running):
    deployment, task, _ = running
    home = Path(deployment.env["RSP_HOME"])
    airflow_home = Path(deployment.env["AIRFLOW_HOME"])
    for folder in (home, airflow_home):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    written = [airflow_home / "airflow.db", home / "task.json", *deployment.logs.rglob("*.log")]
    modes = {str(path.relative_to(home)): oct(stat.S_IMODE(path.stat().st_mode)) for path in written}
    assert set(modes.values()) == {"0o600"}, modes
    assert any("task_id=stay" in name for name in modes)  # the task's own log is among them


def test_once_stopped_no_process_of_it_is_left_after_its_scheduler_was_killed(running):
    deployment, task, stack = running
    before = {p.pid: p for p in processes_of(deployment)}
    assert task["pid"] in before  # the task, in a process group of its own
    assert os.getpgid(task["pid"]) not in {os.getpgid(p.pid) for p in deployment.processes.values()}
    deployment.processes["scheduler"].send_signal(signal.SIGKILL)
    deployment.processes["scheduler"].wait(30)
    assert psutil.Process(task["pid"]).is_running()  # the task outlives its scheduler
    stack.close()  # the deployment's own stop, as leaving its `with` runs it
    left = [p for p in before.values() if alive(p)]
    assert left == [] and airflow_env.in_sessions(deployment.sessions) == []


def alive(process: psutil.Process) -> bool:
    """Running, and the process it was (not a zombie, which is only its exit status)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
