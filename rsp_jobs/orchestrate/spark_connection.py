"""The Spark master of jobs that run under Airflow or beside it (DAG tasks, ``rsp evaluate``):
``RSP_SPARK_MASTER`` (``settings.spark_master``), else the Airflow connection
``RSP_SPARK_CONN_ID`` (default ``rsp_spark``), else ``local[2]``.

A connection of the provider's ``spark_connect`` type (``spark-connect://host:15002`` as a URI)
names a Spark Connect server: its URL is the provider's ``SparkConnectHook.get_connection_url()``,
and the jobs' session is a Connect client (``rsp_jobs.spark.session``): no JVM in the task.

Otherwise the connection is the Apache Spark provider's ``spark`` type, read as the provider's
``SparkSubmitHook`` reads it, so that one connection serves ``SparkSubmitOperator`` and these
jobs (the hook's reading is private to it and builds spark-submit arguments, so it is followed
here, not called):

- host is the master: ``local[n]``, ``yarn`` or a URL (``spark://h``, ``k8s://https://h``), with
  ``:port`` appended when the connection has a port; a connection given as a URI
  (``AIRFLOW_CONN_RSP_SPARK=spark://h:7077``, ``k8s://h:443``) is ``<type>://host:port``;
- extra ``deploy-mode``: only ``client`` works, since the driver is this process (a SparkSession,
  not spark-submit): ``cluster`` is an error rather than silently ignored;
- extra ``queue`` and ``namespace`` become ``spark.yarn.queue`` and ``spark.kubernetes.namespace``;
  the other extras (``spark-binary``, ``keytab``, ``principal``, REST) are spark-submit's.

Beyond the provider: a bare host name without a port is a standalone master on Spark's default
port (``spark://host:7077``; the provider would pass the bare name, which Spark refuses), and an
extra ``master`` gives the URL outright. A connection that is not defined falls back to
``local[2]``; one without host or master is an error.

How the connection is looked up, and when Airflow is imported for it: ``connections``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rsp_jobs import settings
from rsp_jobs.errors import RspError
from rsp_jobs.orchestrate import connections

STANDALONE_PORT = 7077  # Spark's default port of a standalone master


@dataclass(frozen=True)
class SparkTarget:
    master: str
    conf: dict[str, str] = field(default_factory=dict)  # Spark settings the connection adds


def spark_target() -> SparkTarget:
    """Where this process's Spark jobs run (the order in the module docstring)."""
    master = settings.spark_master(default=None)
    if master:
        return SparkTarget(master)
    return _from_airflow(settings.spark_conn_id()) or SparkTarget(settings.DEFAULT_SPARK_MASTER)


def spark_master() -> str:
    return spark_target().master


def get_spark():
    """The process's SparkSession, on ``spark_target()`` when it is created by this call. Call it
    before the engine asks for a session (``spark.session.get_spark``, which knows only the
    environment)."""
    from rsp_jobs.spark.session import get_spark as session

    target = spark_target()
    if target.master.startswith("sc://"):
        require_reachable(target.master)
    return session(target.master, conf=target.conf)


def require_reachable(url: str, timeout: float = 5.0) -> None:
    """Fail at once, naming the server, when nothing listens at a Spark Connect URL: the
    client would otherwise retry for about ten minutes before it says so. The error is a
    ``ConnectionError``, so a task is still retried (a server restarting is back in seconds)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, port = parts.hostname or "localhost", parts.port or 15002
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(
            f"no Spark Connect server at {host}:{port} ({exc.strerror or exc}), which the Airflow "
            f"connection {settings.spark_conn_id()!r} names: start it with `make airflow`, or "
            "run the job's Spark in its own process with RSP_SPARK_MASTER=local[2]"
        ) from None


def target_of_connection(
    conn_id: str, conn_type: str | None, host: str | None, port: int | None, extra: dict | None
) -> SparkTarget:
    """The Spark target an Airflow ``spark`` connection names (the module docstring)."""
    extra = extra or {}
    if str(extra.get("deploy-mode") or "client").strip().lower() != "client":
        raise RspError(
            f"Airflow connection {conn_id!r}: deploy-mode {extra['deploy-mode']!r} is not possible here; "
            "the Spark driver is the job's own process (deploy-mode client)"
        )
    conf = {
        key: str(extra[name])
        for name, key in (
            ("queue", "spark.yarn.queue"),
            ("namespace", "spark.kubernetes.namespace"),
        )
        if extra.get(name)
    }
    master = str(extra.get("master") or "").strip()
    if master:
        return SparkTarget(master, conf)
    host = (host or "").strip()
    if not host:
        raise RspError(
            f"Airflow connection {conn_id!r} names no Spark master: give it a host "
            f'(spark://HOST:PORT) or extra {{"master": URL}}'
        )
    conn_type = conn_type or "spark"
    if conn_type == "spark" and ("://" in host or not port):
        master = host  # as entered in the UI: the host field holds the master
    else:
        master = f"{conn_type}://{host}"  # from a URI: spark://host:port
    if port:
        master = f"{master}:{port}"
    elif "://" not in master and not master.startswith("local") and master != "yarn":
        master = f"spark://{master}:{STANDALONE_PORT}"
    return SparkTarget(master, conf)


def _from_airflow(conn_id: str) -> SparkTarget | None:
    """None when Airflow is not installed or does not define the connection."""
    conn = connections.get_connection(conn_id)
    if conn is None:
        return None
    # a Spark Connect server: the provider's hook builds its URL
    if conn.conn_type == "spark_connect":
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        return SparkTarget(SparkConnectHook(conn_id).get_connection_url())
    return target_of_connection(conn_id, conn.conn_type, conn.host, conn.port, conn.extra_dejson)
