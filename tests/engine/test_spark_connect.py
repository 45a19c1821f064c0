"""Tasks as Spark Connect clients (issue 18: "Tasks do not each start a JVM"): a Connect server
started from the installed pyspark evaluates a registered query exactly as the in-process
session does, records its application in provenance, and reports progress; the Airflow
connection of the Spark provider's ``spark_connect`` type (a URI here) points the jobs at it.
Runs in a subprocess, the way a DAG task is a process of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import suppress

import pytest

from rsp_jobs.demo_deployment import free_port
from rsp_jobs.spark import connect_server

pytestmark = pytest.mark.spark

JOB = r"""
import json, logging, sys
from rsp_jobs.ingest import csrbench
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.compiler import compile_file
from rsp_jobs.engine import evaluate
from rsp_jobs.orchestrate.spark_connection import get_spark, spark_target
from rsp_jobs.spark.session import application_id, is_remote

spark = get_spark()
lake = Lake(sys.argv[1])
lake.write(read_stream_file(sys.argv[2], csrbench.STREAM))
windows = [w.to_json() for w in evaluate(compile_file(csrbench.query_path("q4")), lake)]
print(json.dumps({"master": spark_target().master, "remote": is_remote(spark), "app": application_id(spark),
                  "windows": windows}))
"""


def test_a_job_on_a_connect_server_gives_what_the_in_process_session_gives(tmp_path, data_dir, spark):
    from rsp_jobs.compiler import compile_file
    from rsp_jobs.engine import evaluate
    from rsp_jobs.ingest import csrbench
    from rsp_jobs.ingest.lake import Lake
    from rsp_jobs.ingest.rdf_stream import read_stream_file

    stream = csrbench.write_stream(tmp_path / "stream.nq")
    port = free_port()
    token = connect_server.new_token()
    server = connect_server.start(port, tmp_path / "connect.log", home=tmp_path, token=token)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN", "RSP_SPARK"))}
        env.update(AIRFLOW_CONN_RSP_SPARK=f"spark-connect://:{token}@localhost:{port}", RSP_HOME=str(tmp_path / "home"))
        done = subprocess.run([sys.executable, "-c", JOB, str(tmp_path / "lake"), str(stream)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        remote = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(60)
    assert remote["remote"] and remote["master"] == connect_server.url(port, token)
    assert remote["app"].startswith("local-")
    local = Lake(tmp_path / "local-lake")
    local.write(read_stream_file(stream, csrbench.STREAM))
    expected = [w.to_json() for w in evaluate(compile_file(csrbench.query_path("q4")), local)]
    assert remote["windows"] == expected and len(expected) == 9


CLIENT = r"""
import json, re, sys
from pyspark.sql import SparkSession

outcome = {}
for name, url in json.loads(sys.argv[1]).items():
    try:
        session = SparkSession.builder.remote(url).create()
        outcome[name] = session.range(3).count()
        session.stop()
    except Exception as exc:
        status = re.search(r"StatusCode\.(\w+)", str(exc))
        outcome[name] = status.group(1) if status else str(exc)
print(json.dumps(outcome))
"""


def test_the_connect_server_serves_only_clients_with_its_token(tmp_path):
    """A Connect client runs code as the server's user, so the server asks every client for
    its token: without it, with another, or over 127.0.0.1 with no token it refuses; with it a
    job runs. The token is on no command line the server's processes show."""
    import psutil

    token = connect_server.new_token()
    port = free_port()
    server = connect_server.start(port, tmp_path / "connect.log", home=tmp_path, token=token)
    try:
        tried = {"right": connect_server.url(port, token), "none": connect_server.url(port),
                 "none_by_address": f"sc://127.0.0.1:{port}", "wrong": connect_server.url(port, token[:-1] + "x")}
        env = {k: v for k, v in os.environ.items() if k != connect_server.TOKEN_VARIABLE}
        done = subprocess.run([sys.executable, "-c", CLIENT, json.dumps(tried)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        command_lines = []
        for process in [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]:
            with suppress(psutil.Error):  # spark-submit's short-lived helpers
                command_lines.append(" ".join(process.cmdline()))
    finally:
        server.terminate()
        server.wait(60)
    assert outcome["right"] == 3, outcome
    assert (outcome["none"], outcome["none_by_address"], outcome["wrong"]) == ("UNAUTHENTICATED",) * 3, outcome
    assert any("SparkConnectServer" in line for line in command_lines)
    assert not any(token in line for line in command_lines)
    assert token not in (tmp_path / "connect.log").read_text()


LONG_JOB = r"""
import sys
from pyspark.sql import SparkSession

session = SparkSession.builder.remote(sys.argv[1]).create()
print("started", flush=True)
session.range(0, 10**13, numPartitions=2).selectExpr("sum(id * id % 7)").collect()  # hours on two cores
"""


def _cpu_seconds(pids) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        with suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
    return total


def test_a_client_killed_mid_job_has_its_job_cancelled_on_the_server(tmp_path):
    """A task or an ``rsp`` killed while its job runs leaves no one to read the results: the
    server drops the execution once no client has been attached for ``ABANDONED``'s timeout,
    which interrupts its Spark job (the server's CPU falls back to idle), and still serves the
    next client."""
    import time

    import psutil

    token = connect_server.new_token()
    port = free_port()
    server = connect_server.start(port, tmp_path / "connect.log", home=tmp_path, token=token)
    try:
        pids = [server.pid, *(c.pid for c in psutil.Process(server.pid).children(recursive=True))]
        client = subprocess.Popen([sys.executable, "-c", LONG_JOB, connect_server.url(port, token)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert client.stdout.readline().strip() == "started"

        def busy(seconds: float = 3.0) -> float:
            """The server's CPU use over ``seconds``, in cores."""
            before = _cpu_seconds(pids)
            time.sleep(seconds)
            return (_cpu_seconds(pids) - before) / seconds

        deadline, seen = time.monotonic() + 120, []
        while (load := busy()) < 0.8:  # the job's two tasks running, on a machine that may be busy
            seen.append(round(load, 2))
            assert time.monotonic() < deadline, f"the client's job never ran on the server (cores used: {seen})"
        client.kill()
        client.wait(30)
        killed = time.monotonic()
        while (load := busy()) > 0.3:
            assert time.monotonic() - killed < 120, f"the server still computes ({load:.1f} cores) after the client died"
        cancelled_after = time.monotonic() - killed
        served = subprocess.run([sys.executable, "-c", CLIENT, json.dumps({"next": connect_server.url(port, token)})],
                                capture_output=True, text=True, timeout=300)
    finally:
        server.terminate()
        server.wait(60)
    assert cancelled_after < 75  # a stream of 20 s, 20 s detached, a maintenance every 5 s, the measuring
    assert json.loads(served.stdout.strip().splitlines()[-1]) == {"next": 3}, served.stderr[-2000:]
