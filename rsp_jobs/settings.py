"""Settings read from the environment, each in one place, with the embedded defaults."""
from __future__ import annotations

import configparser
import os
import sys
from pathlib import Path

from rsp_jobs.times import parse_timedelta

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The shared real data (CSRBench, CityBench, DART): ``RSP_DATA_DIR``, default ../shared/data."""
    return Path(os.environ.get("RSP_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


def home_dir() -> Path:
    """The project home: lake, store, Airflow and Spark state live under it (``RSP_HOME``)."""
    path = Path(os.environ.get("RSP_HOME", REPO_ROOT / ".rsp"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def retention(name: str, default: str):
    """A retention setting (``RSP_LOADED_RETENTION``, ``RSP_QUALITY_RETENTION``): how long kept
    files live, a duration such as ``30d`` or ``P30D``; ``forever`` keeps them."""
    from rsp_jobs.errors import InputError

    text = os.environ.get(name, default).strip()
    if text.lower() == "forever":
        return None
    try:
        return parse_timedelta(text)
    except ValueError as exc:
        raise InputError(f"{name}: {exc} (or forever)") from None


def landing_after_load() -> str:
    """What becomes of a landing file once loaded (``RSP_LANDING_LOADED``): ``move`` it to
    ``landing/<stream>/loaded/`` (the default) or ``delete`` it."""
    from rsp_jobs.errors import InputError

    value = os.environ.get("RSP_LANDING_LOADED", "move").strip().lower()
    if value not in ("move", "delete"):
        raise InputError(f"RSP_LANDING_LOADED: move or delete, got {value!r}")
    return value


def max_literal_bytes() -> int:
    """The longest literal (UTF-8 bytes) a query may write or a stream may bring
    (``RSP_MAX_LITERAL_BYTES``, default 1 MiB): longer ones are refused or quarantined in
    seconds rather than carried through lake, store and Spark."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_MAX_LITERAL_BYTES", str(2**20)).strip()
    if not text.isdigit() or int(text) == 0:
        raise InputError(f"RSP_MAX_LITERAL_BYTES: a positive number of bytes, got {text!r}")
    return int(text)


def future_horizon():
    """How far past the present a frame's time may be (``RSP_FUTURE_HORIZON``, a duration such as
    ``5m`` or ``P1D``; default 5 minutes): a frame later than that is a wrong clock or a typo, and
    is quarantined rather than allowed to move a stream's watermark."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_FUTURE_HORIZON", "5m")
    try:
        return parse_timedelta(text)
    except ValueError as exc:
        raise InputError(f"RSP_FUTURE_HORIZON: {exc}") from None


DEFAULT_SPARK_MASTER = "local[2]"
DEFAULT_SPARK_CONN_ID = "rsp_spark"


def spark_master() -> str:
    """Where Spark jobs run, from one setting; the first of:

    1. ``RSP_SPARK_MASTER``, a Spark master URL (``local[2]``, ``spark://host:7077``, ``yarn``,
       ``k8s://...``). Airflow is not imported then.
    2. The Airflow connection ``RSP_SPARK_CONN_ID`` (default ``rsp_spark``), looked up with the
       Task SDK (``airflow.sdk.BaseHook.get_connection``): inside a task that is the API server
       (metadata DB), environment variables and the configured secrets backend; outside a task,
       Airflow 3's SDK reads only ``AIRFLOW_CONN_RSP_SPARK`` and a configured secrets backend, not
       the metadata DB. The connection's ``extra`` ``{"master": URL}`` wins; otherwise its host:
       a host with a scheme or ``local[..]``/``yarn`` is the URL (``:port`` added when the host
       has none), a bare host becomes ``spark://host:port`` (port 7077 by default). So
       ``AIRFLOW_CONN_RSP_SPARK='spark://127.0.0.1:7077'`` gives ``spark://127.0.0.1:7077``.
       A connection that is not defined falls back silently; one without host or master is an
       error. Airflow is only imported when it could know the connection: it is loaded already
       (a task, the DAG processor), ``AIRFLOW_CONN_<ID>`` is set, or a secrets backend is
       configured (``AIRFLOW__SECRETS__BACKEND``, ``AIRFLOW__WORKERS__SECRETS_BACKEND`` or the
       ``airflow.cfg`` of the project's Airflow home); importing Airflow takes seconds.
    3. ``local[2]``: two local cores.
    """
    master = os.environ.get("RSP_SPARK_MASTER", "").strip()
    if master:
        return master
    conn_id = os.environ.get("RSP_SPARK_CONN_ID", "").strip() or DEFAULT_SPARK_CONN_ID
    return _master_from_airflow(conn_id) or DEFAULT_SPARK_MASTER


def _master_from_airflow(conn_id: str) -> str | None:
    """The master URL of Airflow connection ``conn_id``; None when Airflow is not installed or
    the connection is not defined."""
    if not _airflow_may_define(conn_id):
        return None
    if "airflow" not in sys.modules:
        from rsp_jobs.orchestrate import airflow_env

        airflow_env.configure()  # the project's Airflow home, before Airflow reads its config
    try:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:
        return None
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None
    return _master_of_connection(conn_id, conn.host, conn.port, conn.extra_dejson)


def _master_of_connection(conn_id: str, host, port, extra: dict) -> str:
    master = str((extra or {}).get("master") or "").strip()
    if master:
        return master
    host = (host or "").strip()
    if not host:
        from rsp_jobs.errors import RspError

        raise RspError(f"Airflow connection {conn_id!r} names no Spark master: give it a host "
                       f"(spark://HOST:PORT) or extra {{\"master\": URL}}")
    if "://" in host:
        scheme, rest = host.split("://", 1)
        authority, slash, path = rest.partition("/")
        if port and ":" not in authority:
            authority = f"{authority}:{port}"
        return f"{scheme}://{authority}{slash}{path}"
    if host.startswith("local") or host == "yarn":
        return host
    return f"spark://{host}:{port or 7077}"


def _airflow_may_define(conn_id: str) -> bool:
    """Whether Airflow's Task SDK could find connection ``conn_id`` in this process."""
    if "airflow" in sys.modules:
        return True
    if os.environ.get("AIRFLOW_CONN_" + conn_id.upper()) or os.environ.get("_AIRFLOW_PROCESS_CONTEXT"):
        return True
    if any(key.startswith(("AIRFLOW__SECRETS__BACKEND", "AIRFLOW__WORKERS__SECRETS_BACKEND"))
           and value for key, value in os.environ.items()):
        return True
    home = os.environ.get("AIRFLOW_HOME") or str(home_dir() / "airflow")
    cfg_path = Path(os.environ.get("AIRFLOW_CONFIG") or Path(home).expanduser() / "airflow.cfg")
    if not cfg_path.is_file():
        return False
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read(cfg_path, encoding="utf-8")
    except configparser.Error:
        return True  # let Airflow read it
    return bool(cfg.get("secrets", "backend", fallback="").strip()
                or cfg.get("workers", "secrets_backend", fallback="").strip())
