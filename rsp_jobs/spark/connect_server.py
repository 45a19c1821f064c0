"""A long-lived Spark Connect server on this machine, from the installed pyspark (its
``spark-submit`` and the ``spark-connect`` jar it ships), so that Airflow tasks are Connect
clients and do not each start a JVM: ``make airflow`` and ``rsp demo`` run one beside Airflow
and point the ``rsp_spark`` connection at it. Its Spark settings are the engine's
(``rsp_jobs.spark.session``); its master is ``local[2]`` unless given (a cluster's URL works too).

A client runs code in the server's JVM and Python workers, as the server's user: the server
always asks for a pre-shared token (Spark's ``spark.connect.authenticate.token``). It is given
in the server's environment (``SPARK_CONNECT_AUTHENTICATE_TOKEN``, which Spark reads when the
setting is not given), never as a ``--conf``, since a command line is visible to every account
of the machine. A client sends it as ``sc://localhost:PORT/;token=...`` (``url``): pyspark sends a
token without TLS only to the host name ``localhost``, over gRPC's local credentials, which
also refuse a peer that is not on this machine; to any other host it insists on TLS, which the
server does not speak (``docker/README.md``: the tasks reach it on its own loopback there too).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO
from urllib.parse import quote

import pyspark

from rsp_jobs import settings
from rsp_jobs.errors import RspError
from rsp_jobs.spark.session import cluster_conf, engine_conf

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
TOKEN_VARIABLE = (
    "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # read by the server, and by pyspark's client too
)
# A client that dies (a task killed, an `rsp` interrupted) leaves its execution running on the
# server until the server's maintenance finds no RPC attached to it: the server ends a job's
# response stream every senderMaxStreamDuration (default 2 minutes) and a live client attaches
# again at once, so after that and detachedTimeout (default 5 minutes) with no client the
# execution is removed, which interrupts its Spark jobs. Shorter here: a dead client's job
# stops within a minute, for a reattach every 20 s of a long job.
ABANDONED = {
    "spark.connect.execute.reattachable.senderMaxStreamDuration": "20s",
    "spark.connect.execute.manager.detachedTimeout": "20s",
    "spark.connect.execute.manager.maintenanceInterval": "5s",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def server_environment(token: str, current: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The server's environment: ``current`` with the token, the Python of this interpreter for
    its workers, and loopback as the driver's address unless ``current`` names another."""
    if not token or not token.strip():
        raise RspError(
            "the Spark Connect server needs a token for its clients: an empty one would let "
            "any local account run code as this user"
        )
    return {
        **current,
        TOKEN_VARIABLE: token.strip(),
        "PYSPARK_PYTHON": current.get("PYSPARK_PYTHON", sys.executable),
        "SPARK_LOCAL_IP": current.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }


def command(
    port: int,
    master: str = settings.DEFAULT_SPARK_MASTER,
    home: Path | None = None,
    host: str = "127.0.0.1",
) -> list[str]:
    """``spark-submit`` of the server with the engine's settings (``session.engine_conf``), and on
    a cluster master what its executors need (``session.cluster_conf``). ``host``: the address
    it listens on (another machine's tasks need ``0.0.0.0``)."""
    conf = {
        **engine_conf(home or settings.home_dir()),
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": host,
        **ABANDONED,
    }
    if not master.startswith("local"):
        conf.update(cluster_conf())
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    args = [str(submit), "--class", SERVER_CLASS, "--name", "rsp-connect", "--master", master]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return [*args, "spark-internal"]


def start(
    port: int = DEFAULT_PORT,
    log: Path | None = None,
    master: str = settings.DEFAULT_SPARK_MASTER,
    home: Path | None = None,
    timeout: float = 180.0,
    *,
    token: str,
    env: Mapping[str, str] = os.environ,
    umask: int = -1,
) -> subprocess.Popen:
    """Start the server (its output in ``log``, its scratch under ``home``) in a process group of
    its own, with ``env`` (default: this process's) and ``token`` for its clients, and wait until
    it accepts connections. ``umask``: the server's, as ``subprocess.Popen`` takes it."""
    env = server_environment(token, env)
    with contextlib.ExitStack() as opened:  # the server holds its own copy of the log's descriptor
        out: int | IO[bytes] = subprocess.DEVNULL
        if log:
            log.parent.mkdir(parents=True, exist_ok=True)
            out = opened.enter_context(
                open(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
            )
        process = subprocess.Popen(
            command(port, master, home),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            umask=umask,
        )
    deadline = time.monotonic() + timeout
    while not listening(port):
        if process.poll() is not None:
            raise RspError(
                f"the Spark Connect server exited with {process.returncode}"
                + (f": see {log}" if log else "")
            )
        if time.monotonic() > deadline:
            process.kill()
            raise RspError(
                f"the Spark Connect server did not listen on port {port} within {timeout:.0f} s"
            )
        time.sleep(0.5)
    return process


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def url(port: int = DEFAULT_PORT, token: str | None = None) -> str:
    """The client's URL of the server on this machine (``localhost``: see the module docstring)."""
    return f"sc://localhost:{port}/" + (f";token={quote(token, safe='')}" if token else "")


def read_token(path: str | None = None, current: Mapping[str, str] = os.environ) -> str:
    """The token a server in the foreground takes: the file ``path`` (a Docker secret), else
    ``RSP_SPARK_CONNECT_TOKEN_FILE``, else ``RSP_SPARK_CONNECT_TOKEN``; no token is an error."""
    path = path or current.get("RSP_SPARK_CONNECT_TOKEN_FILE")
    if path:
        try:
            token = Path(path).read_text().strip()
        except OSError as exc:
            raise RspError(
                f"cannot read the Spark Connect token from {path}: {exc.strerror}"
            ) from None
    else:
        token = (current.get("RSP_SPARK_CONNECT_TOKEN") or "").strip()
    if not token:
        raise RspError(
            f"the Spark Connect server needs a token for its clients: set RSP_SPARK_CONNECT_TOKEN or "
            f"RSP_SPARK_CONNECT_TOKEN_FILE{f' ({path} is empty)' if path else ''}"
        )
    return token


def main(argv: list[str] | None = None) -> int:
    """``python -m rsp_jobs.spark.connect_server``: the server in the foreground (a container's
    process: ``docker/compose.yaml``)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.spark.connect_server", description=__doc__
    )
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("RSP_SPARK_CONNECT_PORT") or DEFAULT_PORT)
    )
    parser.add_argument(
        "--master", default=settings.spark_master(), help="default: RSP_SPARK_MASTER or local[2]"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (0.0.0.0: every interface)"
    )
    parser.add_argument(
        "--token-file",
        help="the clients' token (default: RSP_SPARK_CONNECT_TOKEN_FILE, "
        "else RSP_SPARK_CONNECT_TOKEN)",
    )
    args = parser.parse_args(argv)
    try:
        env = server_environment(read_token(args.token_file))
    except RspError as exc:
        print(f"rsp: error: {exc}", file=sys.stderr)
        return 2
    return subprocess.call(command(args.port, args.master, host=args.host), env=env)


if __name__ == "__main__":
    sys.exit(main())
