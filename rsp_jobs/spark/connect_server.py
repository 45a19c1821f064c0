"""A long-lived Spark Connect server on this machine, from the installed pyspark (its
``spark-submit`` and the ``spark-connect`` jar it ships), so that Airflow tasks are Connect
clients and do not each start a JVM: ``make airflow`` and ``rsp demo`` run one beside Airflow
and point the ``rsp_spark`` connection at it. Its Spark settings are the engine's
(``rsp_jobs.spark.session``); its master is ``local[2]`` unless given (a cluster's URL works too).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pyspark

from rsp_jobs import settings
from rsp_jobs.errors import RspError
from rsp_jobs.spark.session import engine_conf

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002


def command(port: int, master: str = settings.DEFAULT_SPARK_MASTER, home: Optional[Path] = None) -> list[str]:
    """``spark-submit`` of the server with the engine's settings (``session.engine_conf``)."""
    conf = {**engine_conf(home or settings.home_dir()), "spark.connect.grpc.binding.port": str(port),
            "spark.connect.grpc.binding.address": "127.0.0.1"}
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    args = [str(submit), "--class", SERVER_CLASS, "--name", "rsp-connect", "--master", master]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args + ["spark-internal"]


def start(port: int = DEFAULT_PORT, log: Optional[Path] = None, master: str = settings.DEFAULT_SPARK_MASTER,
          home: Optional[Path] = None, timeout: float = 180.0) -> subprocess.Popen:
    """Start the server (its output in ``log``, its scratch under ``home``) in a process group of
    its own, and wait until it accepts connections."""
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
           "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(command(port, master, home), env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + timeout
    while not listening(port):
        if process.poll() is not None:
            raise RspError(f"the Spark Connect server exited with {process.returncode}" + (f": see {log}" if log else ""))
        if time.monotonic() > deadline:
            process.kill()
            raise RspError(f"the Spark Connect server did not listen on port {port} within {timeout:.0f} s")
        time.sleep(0.5)
    return process


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def url(port: int = DEFAULT_PORT) -> str:
    return f"sc://127.0.0.1:{port}"
