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
from rsp_jobs.spark.session import cluster_conf, engine_conf

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002


def command(port: int, master: str = settings.DEFAULT_SPARK_MASTER, home: Optional[Path] = None,
            host: str = "127.0.0.1") -> list[str]:
    """``spark-submit`` of the server with the engine's settings (``session.engine_conf``), and on
    a cluster master what its executors need (``session.cluster_conf``). ``host``: the address
    it listens on (another machine's tasks need ``0.0.0.0``)."""
    conf = {**engine_conf(home or settings.home_dir()), "spark.connect.grpc.binding.port": str(port),
            "spark.connect.grpc.binding.address": host}
    if not master.startswith("local"):
        conf.update(cluster_conf())
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


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m rsp_jobs.spark.connect_server``: the server in the foreground (a container's
    process: ``docker/compose.yaml``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rsp_jobs.spark.connect_server", description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("RSP_SPARK_CONNECT_PORT") or DEFAULT_PORT))
    parser.add_argument("--master", default=settings.spark_master(), help="default: RSP_SPARK_MASTER or local[2]")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (0.0.0.0: every interface)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return subprocess.call(command(args.port, args.master, host=args.host))


if __name__ == "__main__":
    sys.exit(main())
