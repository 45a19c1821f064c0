"""The Airflow connections of the platform, as Admin -> Connections shows them: ``rsp_spark``
(where Spark runs: ``spark_connection``) and ``rsp_store`` (the frame store: here). The
environment overrides both (``RSP_SPARK_MASTER``, ``RSP_STORE_URL``); without Airflow, or when it
does not define them, the embedded defaults apply (``local[2]``, the SQLite store under the
project home).

Looking a connection up uses the Task SDK (``airflow.sdk.BaseHook.get_connection``): inside a
task that is the API server (metadata DB), environment variables and the secrets backend;
outside a task, only ``AIRFLOW_CONN_<ID>`` and a configured secrets backend. Importing Airflow
takes seconds, so it is imported only when it could know the connection: it is loaded already
(a task, the DAG processor), ``AIRFLOW_CONN_<ID>`` is set, or a secrets backend is configured.
"""

from __future__ import annotations

import configparser
import os
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from rsp_jobs import settings
from rsp_jobs.errors import RspError
from rsp_jobs.orchestrate import airflow_env


def get_connection(conn_id: str) -> Any | None:
    """Airflow's connection ``conn_id``; None when Airflow is not installed or does not define it."""
    if not airflow_may_define(conn_id):
        return None
    if "airflow" not in sys.modules:
        airflow_env.configure()  # the project's Airflow home, before Airflow reads its config
    try:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:
        return None
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def store_url(lookup=None) -> str | None:
    """The frame store's URL: ``RSP_STORE_URL``, else the ``rsp_store`` connection (found by
    ``lookup(conn_id)``, default ``get_connection``), else None (the store's own default,
    ``store.db.store_url()``)."""
    if os.environ.get("RSP_STORE_URL"):
        return os.environ["RSP_STORE_URL"]
    conn = (lookup or get_connection)(settings.store_conn_id())
    if conn is None:
        return None
    return url_of_connection(
        settings.store_conn_id(),
        conn.conn_type,
        conn.host,
        conn.login,
        conn.password,
        conn.port,
        conn.schema,
        conn.extra_dejson,
    )


def use_store_connection() -> str | None:
    """Point this process (and what it starts) at the store ``store_url()`` names, by setting
    ``RSP_STORE_URL``: every task calls it first, so that the store calls below it need no URL."""
    url = store_url()
    if url:
        os.environ["RSP_STORE_URL"] = url
    return url


def url_of_connection(
    conn_id: str,
    conn_type: str | None,
    host: str | None,
    login: str | None = None,
    password: str | None = None,
    port: int | None = None,
    schema: str | None = None,
    extra: dict | None = None,
) -> str:
    """The SQLAlchemy URL an Airflow connection names: type ``sqlite`` (host: the file's path),
    ``postgres`` (host, port, login, password; schema: the database; extra ``options``, e.g.
    ``-csearch_path=rsp``), or any type with extra ``url`` giving it outright."""
    extra = extra or {}
    if extra.get("url"):
        return str(extra["url"])
    kind = (conn_type or "").strip().lower()
    if kind == "sqlite":
        if not host:
            raise RspError(
                f"Airflow connection {conn_id!r}: a sqlite connection needs the file's path as its host"
            )
        return f"sqlite:///{host}"
    if kind in ("postgres", "postgresql"):
        if not host:
            raise RspError(f"Airflow connection {conn_id!r}: a postgres connection needs a host")
        query = {"options": str(extra["options"])} if extra.get("options") else {}
        return URL.create(
            "postgresql+psycopg",
            username=login or None,
            password=password or None,
            host=host,
            port=port or None,
            database=schema or None,
            query=query,
        ).render_as_string(hide_password=False)
    raise RspError(
        f"Airflow connection {conn_id!r}: the frame store is SQLite or PostgreSQL: "
        f'give it type sqlite or postgres (or extra {{"url": SQLALCHEMY_URL}}), not {conn_type!r}'
    )


def airflow_may_define(conn_id: str) -> bool:
    """Whether Airflow's Task SDK could find connection ``conn_id`` in this process."""
    if "airflow" in sys.modules:
        return True
    if os.environ.get("AIRFLOW_CONN_" + conn_id.upper()) or os.environ.get(
        "_AIRFLOW_PROCESS_CONTEXT"
    ):
        return True
    if any(
        key.startswith(("AIRFLOW__SECRETS__BACKEND", "AIRFLOW__WORKERS__SECRETS_BACKEND")) and value
        for key, value in os.environ.items()
    ):
        return True
    home = os.environ.get("AIRFLOW_HOME") or str(settings.home_dir() / "airflow")
    cfg_path = Path(os.environ.get("AIRFLOW_CONFIG") or Path(home).expanduser() / "airflow.cfg")
    if not cfg_path.is_file():
        return False
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read(cfg_path, encoding="utf-8")
    except configparser.Error:
        return True  # let Airflow read it
    return bool(
        cfg.get("secrets", "backend", fallback="").strip()
        or cfg.get("workers", "secrets_backend", fallback="").strip()
    )
