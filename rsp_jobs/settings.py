"""Settings read from the environment, each in one place, with the embedded defaults.

The project settings file (``rsp.toml`` beside ``queries/``, or the file ``RSP_SETTINGS``
names) gives every component the same settings: ``rsp``, each Airflow component and each task
import this package, and importing it puts the file's settings into the process's environment
under their ``RSP_`` names wherever the environment does not already set them. So the
environment still overrides the file, and a child process (an Airflow component, a Spark
worker) inherits what its parent read.
"""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path

from rsp_jobs.times import parse_timedelta

REPO_ROOT = Path(__file__).resolve().parent.parent
SETTINGS_FILE = REPO_ROOT / "rsp.toml"

# what the settings file may set (docs/operations/settings.md): every setting but the secrets,
# which belong in the environment or in the owner-only files the deployment makes
FILE_SETTINGS = frozenset(
    f"RSP_{name}"
    for name in [
        "DATA_DIR",
        "HOME",
        "QUERIES_DIR",
        "STORE_URL",
        "SPARK_MASTER",
        "EXECUTOR_MEMORY",
        "SPARK_CORES_MAX",
        "TASK_RETRIES",
        "TASK_RETRY_DELAY",
        "INGEST_EVERY",
        "SCHEDULED_RUNS",
        "AIRFLOW_USER",
        "SHUFFLE_PARTITIONS",
        "DRIVER_MEMORY",
        "JVM_OPTIONS",
        "CLASS_ARCHIVE",
        "INTERPRETED_BELOW_ROWS",
        "INPUT_WAIT",
        "REPLAY_WAIT",
        "SPARK_CONNECT_HOST",
        "SPARK_CONNECT_PORT",
        "SPARK_CONNECT_TOKEN_FILE",
        "NOTIFIERS",
        "AIRFLOW_NOTIFIER_KWARGS",
        "MAX_LITERAL_BYTES",
        "FUTURE_HORIZON",
        "QUARANTINE_POLICY",
        "LANDING_LOADED",
        "LOADED_RETENTION",
        "OPTIMIZER_SKIP",
        "QUALITY_RETENTION",
        "MAX_WINDOWS",
        "MAX_PATH_STEPS",
        "MAX_WINDOW_ROWS",
        "STREAM_CHUNK_BYTES",
        "LANDING_QUIET",
        "DOCS_ASSETS",
        "SPARK_CONN_ID",
        "STORE_CONN_ID",
        "TEST_PG_URL",
        "BENCH_PG_URL",
    ]
)
SECRET_SETTINGS = frozenset({"RSP_AIRFLOW_PASSWORD", "RSP_SPARK_CONNECT_TOKEN"})
# relative paths in the file are from its folder, whichever folder a component starts in
PATH_SETTINGS = frozenset(
    {
        "RSP_DATA_DIR",
        "RSP_HOME",
        "RSP_QUERIES_DIR",
        "RSP_SPARK_CONNECT_TOKEN_FILE",
        "RSP_DOCS_ASSETS",
    }
)


def settings_file() -> Path | None:
    """The project settings file in use: ``RSP_SETTINGS`` (``none``: no file), else
    ``rsp.toml`` in the repository if there is one."""
    named = os.environ.get("RSP_SETTINGS")
    if named is not None:
        return None if named.strip().lower() in ("", "none") else Path(named).resolve()
    return SETTINGS_FILE if SETTINGS_FILE.is_file() else None


def read_settings_file(path: Path) -> dict[str, str]:
    """The file's settings by their environment names, paths made absolute; a key that is no
    setting, a secret, or a value that is not a string, number or boolean is refused, naming
    the file and the key."""
    from rsp_jobs.errors import InputError

    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"RSP_SETTINGS: {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a TOML settings file: {exc}") from None
    found: dict[str, str] = {}
    for key, value in table.items():
        name = key.upper() if key.upper().startswith("RSP_") else f"RSP_{key.upper()}"
        if name in SECRET_SETTINGS:
            raise InputError(
                f"{path}: {key}: a secret is not kept in the settings file; set {name} in the "
                "environment (docs/operations/security.md)"
            )
        if name not in FILE_SETTINGS:
            known = ", ".join(sorted(n[4:].lower() for n in FILE_SETTINGS))
            raise InputError(f"{path}: {key} is no setting (the settings are: {known})")
        if isinstance(value, bool):
            text = str(value).lower()
        elif isinstance(value, (str, int, float)):
            text = str(value)
        else:
            raise InputError(f"{path}: {key}: a string, number or boolean, got {value!r}")
        if name == "RSP_STORE_URL" and _has_password(text):
            raise InputError(
                f"{path}: {key}: the URL carries a password; give the store URL in the "
                "environment (RSP_STORE_URL) or the rsp_store connection instead"
            )
        if name in PATH_SETTINGS:
            text = str((path.parent / Path(text).expanduser()).resolve())
        found[name] = text
    return found


def _has_password(url: str) -> bool:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).password is not None
    except ArgumentError:
        return False  # not a URL: the store says so when it is opened


def apply_settings_file() -> Path | None:
    """Put the settings file's settings into the environment where it has none; returns the
    file, or None when there is none."""
    path = settings_file()
    if path is not None:
        for name, value in read_settings_file(path).items():
            if name not in os.environ:
                os.environ[name] = value
                FROM_FILE.add(name)
    return path


FROM_FILE: set[str] = set()  # the settings this process took from the file, not the environment


def in_use() -> str:
    """One line naming the settings file and the folders every component reads, printed when
    a component starts, so that two shells or a shell and the scheduler can be compared."""
    path = settings_file()
    source = f"settings {path}" if path else "no settings file (environment and defaults)"
    home = os.environ.get("RSP_HOME", REPO_ROOT / ".rsp")
    return f"{source}; queries {queries_dir()}; home {home}; data {data_dir()}"


def queries_dir() -> Path:
    """The registered queries and ``streams.toml``: ``RSP_QUERIES_DIR``, default the
    repository's ``queries/``."""
    return Path(os.environ.get("RSP_QUERIES_DIR", REPO_ROOT / "queries"))


def data_dir() -> Path:
    """The shared real data (CSRBench, CityBench, DART): ``RSP_DATA_DIR``, default ../shared/data."""
    return Path(os.environ.get("RSP_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


def home_dir() -> Path:
    """The project home: lake, store, Airflow and Spark state live under it (``RSP_HOME``).
    Created readable by its owner only, since the store, the lake and the deployment's secrets
    are in it; a home that exists keeps its mode (the Airflow deployment narrows its own)."""
    path = Path(os.environ.get("RSP_HOME", REPO_ROOT / ".rsp"))
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
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


def task_retries() -> tuple[int, timedelta]:
    """How often an Airflow task is retried after a transient failure, and after how long
    (``RSP_TASK_RETRIES``, default 2; ``RSP_TASK_RETRY_DELAY``, default 1m). A failure the input
    or the query causes (bad data, a failed quality check, a query error) is not retried."""
    from rsp_jobs.errors import InputError

    try:
        retries = int(os.environ.get("RSP_TASK_RETRIES", "2"))
        delay = parse_timedelta(os.environ.get("RSP_TASK_RETRY_DELAY", "1m"))
    except ValueError as exc:
        raise InputError(f"RSP_TASK_RETRIES / RSP_TASK_RETRY_DELAY: {exc}") from None
    if retries < 0:
        raise InputError(f"RSP_TASK_RETRIES: {retries} is negative")
    return retries, delay


def quarantine_policy() -> str:
    """What an ingest run whose input had rejected parts ends as (``RSP_QUARANTINE_POLICY``):
    ``warn`` (the default) loads what was accepted and marks the run's ``quarantined_input`` task
    done with the parts in its log; ``fail`` loads the same but fails that task, and so the run.
    Either way nothing rejected is lost: it is in the store's quarantine (``rsp quarantine``)."""
    from rsp_jobs.errors import InputError

    value = os.environ.get("RSP_QUARANTINE_POLICY", "warn").strip().lower()
    if value not in ("warn", "fail"):
        raise InputError(f"RSP_QUARANTINE_POLICY: warn or fail, got {value!r}")
    return value


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


def max_windows() -> int:
    """The most window closes one evaluation may compute (``RSP_MAX_WINDOWS``, default 500,000):
    every close's results come back to the driver, and its rows are made in Spark first, so an
    evaluation past it is refused before it starts rather than run out of memory."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_MAX_WINDOWS", "500000").strip().replace("_", "")
    if not text.isdigit() or int(text) == 0:
        raise InputError(f"RSP_MAX_WINDOWS: a positive number of window closes, got {text!r}")
    return int(text)


def max_window_rows() -> int:
    """The most window rows one evaluation may make (``RSP_MAX_WINDOW_ROWS``, default 10^9):
    each triple of the slice is copied into RANGE / STEP windows, and the copies are what
    Spark holds and shuffles."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_MAX_WINDOW_ROWS", str(10**9)).strip().replace("_", "")
    if not text.isdigit() or int(text) == 0:
        raise InputError(f"RSP_MAX_WINDOW_ROWS: a positive number of rows, got {text!r}")
    return int(text)


def max_path_steps() -> int:
    """The most steps a ``*`` or ``+`` property path may take to reach its fixpoint
    (``RSP_MAX_PATH_STEPS``, default 100): each step is a Spark job over the pairs found last
    (``spark/paths.py``), so a path through a longer chain of a window's or the background's
    triples is refused, naming it, rather than left to run job after job."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_MAX_PATH_STEPS", "100").strip().replace("_", "")
    if not text.isdigit() or int(text) == 0:
        raise InputError(f"RSP_MAX_PATH_STEPS: a positive number of steps, got {text!r}")
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


def replay_wait():
    """How long a replay whose recorded data stops short of its interval waits for more to land
    (``RSP_REPLAY_WAIT``, a duration; default 0: it fails at once, naming where the data ends).
    Set it where replays are triggered while their last file is still being dropped."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_REPLAY_WAIT", "0s")
    try:
        return parse_timedelta(text)
    except ValueError as exc:
        raise InputError(f"RSP_REPLAY_WAIT: {exc}") from None


def input_wait():
    """How long a run waits for inputs that lag (``RSP_INPUT_WAIT``, a duration; default 30
    minutes), counted from the later of its interval's end and the start of its wait; an input
    stream already further behind the run's interval than that, with nothing in its landing
    folder, fails the run at once (``orchestrate.watermark``)."""
    from rsp_jobs.errors import InputError

    text = os.environ.get("RSP_INPUT_WAIT", "30m")
    try:
        return parse_timedelta(text)
    except ValueError as exc:
        raise InputError(f"RSP_INPUT_WAIT: {exc}") from None


DEFAULT_SPARK_MASTER = "local[2]"
DEFAULT_STORE_CONN_ID = "rsp_store"
DEFAULT_SPARK_CONN_ID = "rsp_spark"


def spark_master(default: str | None = DEFAULT_SPARK_MASTER) -> str | None:
    """Where Spark jobs run, as set in the environment: ``RSP_SPARK_MASTER``, a Spark master URL
    (``local[2]``, ``spark://host:7077``, ``yarn``, ``k8s://...``), else ``default``. Jobs that
    may run under Airflow try its connection before the default (``orchestrate.spark_connection``):
    this module imports neither Airflow nor the orchestration."""
    return os.environ.get("RSP_SPARK_MASTER", "").strip() or default


def spark_conn_id() -> str:
    """The Airflow connection that may name the Spark master: ``RSP_SPARK_CONN_ID``, default
    ``rsp_spark``."""
    return os.environ.get("RSP_SPARK_CONN_ID", "").strip() or DEFAULT_SPARK_CONN_ID


def store_conn_id() -> str:
    """The Airflow connection that may name the frame store when ``RSP_STORE_URL`` is not set
    (``orchestrate.connections``): ``RSP_STORE_CONN_ID``, default ``rsp_store``."""
    return os.environ.get("RSP_STORE_CONN_ID", "").strip() or DEFAULT_STORE_CONN_ID
