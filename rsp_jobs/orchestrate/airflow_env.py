"""Airflow's configuration on the embedded defaults: its home, metadata database (SQLite) and
logs under the project home, the project's ``dags/`` folder, a LocalExecutor that preloads what
tasks import (``executor``), no example DAGs, an
API server on localhost, and a login for the UI (simple auth manager, one admin user, password
file under the Airflow home; ``simple_auth_manager_all_admins`` off: on, it opens the UI to all).

Every value is a default: a variable already set in the environment wins, so production points
Airflow at PostgreSQL and its own users with the usual ``AIRFLOW__SECTION__KEY`` variables.
Must be applied before Airflow is first imported in a process (Airflow reads its config once).

``python -m rsp_jobs.orchestrate.airflow_env`` (``make airflow``) prepares all of it (the settings
also written into ``airflow.cfg`` for the ``airflow`` CLI, the ``rsp_spark`` connection in the
metadata database, of the Spark provider's ``spark_connect`` type) and runs a Spark Connect
server (``RSP_SPARK_CONNECT_PORT``, default 15002) that the tasks use, and the components (API server and UI, scheduler, DAG processor, triggerer) until Ctrl-C. Not ``airflow
standalone``: its Ctrl-C can hang on a component that does not exit (seen with the DAG processor),
so ``stop`` escalates to SIGKILL; the test deployment (tests/orchestrate) runs the same way.

What the deployment exposes (``docs/operations/security.md``): the Connect server asks for a
token made at set-up (``ensure_connect_token``) that only the ``rsp_spark`` connection carries;
every listener is on loopback (the scheduler's and triggerer's log servers, which listen on every
interface, are not started: the API server reads the task logs from the same disk); what it
writes is its owner's only (``UMASK``, a project home of mode 0700); and ``stop`` ends every
process the deployment started, task processes included (``stop``: by their sessions).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.orchestrate import airflow_sqlite

PASSWORDS_FILE = "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
# The scheduler's (worker) and triggerer's log servers bind every interface and Airflow has no
# setting for their address; with the components sharing one log folder (one machine, or the
# compose file's shared volume), the API server reads the task and trigger logs from it, so
# they are not started.
COMPONENT_OPTIONS = {"scheduler": ("--skip-serve-logs",), "triggerer": ("--skip-serve-logs",)}
CONNECT_TOKEN_FILE = "spark-connect-token"
# What the deployment's processes create (metadata DB, logs, lake partitions, store, GX results)
# is readable by its owner only.
UMASK = 0o077


def environment(
    home: Path | None = None, current: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The environment Airflow processes of this project run with (values in ``current`` win)."""
    home = Path(home) if home else settings.home_dir()
    airflow_home = Path(current.get("AIRFLOW_HOME") or home / "airflow")
    user = current.get("RSP_AIRFLOW_USER") or "admin"
    port = current.get("AIRFLOW__API__PORT") or "8080"
    defaults = {
        "RSP_HOME": str(home),
        "RSP_AIRFLOW_USER": user,
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(settings.REPO_ROOT / "dags"),
        # the answers pages in the UI (plugins/rsp_answers.py)
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(settings.REPO_ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "rsp_jobs.orchestrate.executor.PreloadingLocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": port,
        # workers send task state to the API server: it must be this port, not the default 8080
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://localhost:{port}/execution/",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:admin",
        PASSWORDS_FILE: str(airflow_home / "passwords.json"),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "20",
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
        "GX_ANALYTICS_ENABLED": "false",
        # two lines per DAG at each parse (its next run), and two per task for its OpenLineage
        # events, which buried a run's own lines in `airflow dags test` and the DAG processor's
        # log; their warnings still show
        "AIRFLOW__LOGGING__NAMESPACE_LEVELS": (
            "airflow.models.dag=WARNING airflow.serialization.definitions.dag=WARNING"
            " openlineage.client=WARNING airflow.providers.openlineage=WARNING"
        ),
        # OpenLineage run events (rsp_jobs.orchestrate.lineage_events), one JSON line each, to a
        # file of the home unless another transport is set; in a thread, not a forked child,
        # since a task process holds Spark Connect's gRPC channel, which forking breaks
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(openlineage_file(home)), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "rsp",
        "AIRFLOW__OPENLINEAGE__EXTRACTORS": "rsp_jobs.orchestrate.lineage_events.Extractor",
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
        # the client sets its own logger's level: "will use `file` transport" at each event
        "OPENLINEAGE_CLIENT_LOGGING": "WARNING",
    }
    conn = "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"
    # wait for its lock: see airflow_sqlite
    if (current.get(conn) or defaults[conn]).startswith("sqlite"):
        defaults["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS"] = f"{airflow_sqlite.__name__}.SYNC"
        defaults["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC"] = (
            f"{airflow_sqlite.__name__}.ASYNC"
        )
    return {key: current.get(key) or value for key, value in defaults.items()}


def openlineage_file(home: Path) -> Path:
    """Where the default transport appends the OpenLineage events."""
    return home / "openlineage" / "events.jsonl"


def configure(home: Path | None = None) -> dict[str, str]:
    """Apply ``environment()`` to this process (before importing Airflow); returns it."""
    env = environment(home)
    os.environ.update(env)
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    return env


def make_private(env: dict[str, str]) -> None:
    """The project home and the Airflow home readable by their owner only, and Airflow's SQLite
    database created so: the home holds the metadata DB, the store, the lake and the secrets."""
    airflow_home = Path(env["AIRFLOW_HOME"])
    airflow_home.mkdir(parents=True, exist_ok=True)
    openlineage_file(Path(env["RSP_HOME"])).parent.mkdir(parents=True, exist_ok=True)
    for folder in {Path(env["RSP_HOME"]), airflow_home}:
        folder.chmod(0o700)
    url = env.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "")
    if url.startswith("sqlite:///"):
        private_file(Path(url.removeprefix("sqlite:///")))


def private_file(path: Path) -> Path:
    """``path`` with mode 0600, created empty when missing (SQLite gives its journal files the
    database's mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    path.chmod(0o600)
    return path


def airflow_command(*args: str) -> list[str]:
    """The ``airflow`` CLI of this interpreter's environment."""
    return [str(Path(sys.executable).with_name("airflow")), *args]


def migrate(env: dict[str, str]) -> None:
    """Create or upgrade Airflow's metadata database (``airflow db migrate``)."""
    make_private(env)
    subprocess.run(
        airflow_command("db", "migrate"),
        env={**os.environ, **env},
        check=True,
        stdout=subprocess.DEVNULL,
        umask=UMASK,
    )


def write_config(env: dict[str, str]) -> Path:
    """Write the ``AIRFLOW__SECTION__KEY`` settings of ``env`` into ``$AIRFLOW_HOME/airflow.cfg``
    (which ``airflow db migrate`` creates with Airflow's defaults: the DAG folder under the
    Airflow home, the example DAGs on), so that the ``airflow`` CLI run by hand with only
    ``AIRFLOW_HOME`` set (``airflow dags list``, ``airflow tasks test``) sees what the
    components see. Edits the lines in place: the file's comments stay."""
    path = Path(env["AIRFLOW_HOME"]) / "airflow.cfg"
    lines = path.read_text().splitlines() if path.exists() else []
    for name, value in sorted(env.items()):
        parts = name.split("__")
        if len(parts) != 3 or parts[0] != "AIRFLOW":
            continue
        section, key = parts[1].lower(), parts[2].lower()
        setting = f"{key} = {value.replace('%', '%%')}"  # Airflow reads the file with interpolation
        header = lines.index(f"[{section}]") if f"[{section}]" in lines else None
        if header is None:
            lines += ["", f"[{section}]", setting]
            continue
        end = next(
            (i for i in range(header + 1, len(lines)) if lines[i].startswith("[")), len(lines)
        )
        at = next(
            (i for i in range(header + 1, end) if lines[i].split("=", 1)[0].strip() == key), None
        )
        if at is None:
            lines.insert(header + 1, setting)
        else:
            lines[at] = setting
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)  # it holds the fernet key and the JWT secret
    return path


def ensure_connections(
    env: dict[str, str], connect_port: int | None = None, connect_token: str | None = None
) -> None:
    """The platform's connections (``platform_connections``) in Airflow's metadata database, so
    that Admin -> Connections shows them and can change them; each left alone when it exists,
    except that a ``spark_connect`` connection to the server this deployment runs (same host and
    port) is given the server's token when it lacks it (one made before the server had a token)."""
    wanted = platform_connections(env, connect_port, connect_token)
    run = {**os.environ, **env}
    listed = subprocess.run(
        airflow_command("connections", "list", "--show-values", "-o", "json"),
        env=run,
        check=True,
        capture_output=True,
        text=True,
        umask=UMASK,
    ).stdout.splitlines()
    # after any warning
    table = next((line for line in reversed(listed) if line.startswith("[")), "[]")
    existing = {c["conn_id"]: c for c in json.loads(table)}
    missing = {name: fields for name, fields in wanted.items() if name not in existing}
    spark = settings.spark_conn_id()
    if spark in wanted and spark in existing and _stale_token(existing[spark], wanted[spark]):
        subprocess.run(
            airflow_command("connections", "delete", spark),
            env=run,
            check=True,
            stdout=subprocess.DEVNULL,
            umask=UMASK,
        )
        missing[spark] = wanted[spark]
    if missing:
        # the file holds the token and the store's password: created 0600 by tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=env["AIRFLOW_HOME"]) as file:
            json.dump(missing, file)
            file.flush()
            subprocess.run(
                airflow_command("connections", "import", file.name),
                env=run,
                check=True,
                stdout=subprocess.DEVNULL,
                umask=UMASK,
            )


def _stale_token(existing: dict, wanted: dict) -> bool:
    same_server = (existing.get("conn_type"), existing.get("host"), str(existing.get("port"))) == (
        wanted.get("conn_type"),
        wanted.get("host"),
        str(wanted.get("port")),
    )
    return (
        same_server
        and wanted.get("conn_type") == "spark_connect"
        and existing.get("password") != wanted.get("password")
    )


def platform_connections(
    env: dict[str, str], connect_port: int | None = None, connect_token: str | None = None
) -> dict[str, dict]:
    """The connections the platform's tasks read, as ``airflow connections import`` takes them:

    - ``rsp_spark``, the Spark the tasks use: the Spark provider's ``spark_connect`` type on the
      Connect server at ``RSP_SPARK_CONNECT_HOST`` (default ``localhost``: pyspark sends a token
      without TLS to that name only) and ``connect_port`` (what ``make airflow`` runs), its token
      ``connect_token`` in the password field (the provider's "Token"), else its ``spark`` type on
      ``local[2]`` (a JVM per task); not made when ``AIRFLOW_CONN_RSP_SPARK`` is set (the
      environment wins over the database);
    - ``rsp_store``, the frame store: ``RSP_STORE_URL`` or the SQLite store under the project
      home, as a ``sqlite`` or ``postgres`` connection (read by ``connections.store_url``)."""
    from rsp_jobs.store import db

    wanted = {}
    spark = settings.spark_conn_id()
    if not os.environ.get(f"AIRFLOW_CONN_{spark.upper()}"):
        where = (
            {
                "conn_type": "spark_connect",
                "host": os.environ.get("RSP_SPARK_CONNECT_HOST") or "localhost",
                "port": connect_port,
                **({"password": connect_token} if connect_token else {}),
            }
            if connect_port
            else {"conn_type": "spark", "host": settings.DEFAULT_SPARK_MASTER}
        )
        wanted[spark] = {**where, "description": "Spark for the RSP jobs (tasks and rsp evaluate)"}
    wanted[settings.store_conn_id()] = {
        **store_connection(db.store_url(Path(env["RSP_HOME"]))),
        "description": "The RSP frame store (frames, results, provenance)",
    }
    return wanted


def store_connection(url: str) -> dict:
    """The Airflow connection (``sqlite`` or ``postgres``) of a store URL."""
    from sqlalchemy import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return {"conn_type": "sqlite", "host": parsed.database}
    fields = {
        "conn_type": "postgres",
        "host": parsed.host,
        "port": parsed.port,
        "login": parsed.username,
        "password": parsed.password,
        "schema": parsed.database,
    }
    if parsed.query.get("options"):
        fields["extra"] = json.dumps({"options": parsed.query["options"]})
    return {key: value for key, value in fields.items() if value}


def ensure_password(env: dict[str, str], password: str | None = None) -> Path:
    """Give the UI user a password in the simple auth manager's file (JSON ``{user: password}``):
    ``password`` or ``RSP_AIRFLOW_PASSWORD`` when given, else a random one made once and kept.
    Returns the file, readable by its owner only, since the password is stored in clear."""
    path = Path(env[PASSWORDS_FILE])
    passwords = json.loads(path.read_text() or "{}") if path.exists() else {}
    user = env["RSP_AIRFLOW_USER"]
    password = (
        password
        or os.environ.get("RSP_AIRFLOW_PASSWORD")
        or passwords.get(user)
        or secrets.token_urlsafe(12)
    )
    if passwords.get(user) != password:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**passwords, user: password}) + "\n")
    path.chmod(0o600)
    return path


def ensure_connect_token(env: dict[str, str]) -> str:
    """The token of the deployment's Spark Connect server: ``RSP_SPARK_CONNECT_TOKEN`` when given,
    else one made once and kept in ``$AIRFLOW_HOME/spark-connect-token`` (mode 0600), as the
    UI's password is. The server gets it in its environment, the tasks through ``rsp_spark``."""
    path = Path(env["AIRFLOW_HOME"]) / CONNECT_TOKEN_FILE
    kept = path.read_text().strip() if path.exists() else ""
    token = (
        (os.environ.get("RSP_SPARK_CONNECT_TOKEN") or "").strip() or kept or connect_server_token()
    )
    if token != kept:
        private_file(path).write_text(token + "\n")
    path.chmod(0o600)
    return token


def connect_server_token() -> str:
    from rsp_jobs.spark.connect_server import new_token

    return new_token()


def component_command(name: str) -> list[str]:
    return airflow_command(name, *COMPONENT_OPTIONS.get(name, ()))


def start(env: dict[str, str], logs: Path) -> dict[str, subprocess.Popen]:
    """Start every component with its output in ``logs/<component>.log``, each in a session (and
    process group) of its own, with the umask ``UMASK``."""
    logs.mkdir(parents=True, exist_ok=True)
    processes = {}
    for name in COMPONENTS:
        with private_file(logs / f"{name}.log").open("ab") as log:
            processes[name] = subprocess.Popen(
                component_command(name),
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                umask=UMASK,
            )
    return processes


def in_sessions(sessions: Iterable[int]) -> list:
    """The live processes (psutil) of the sessions ``sessions``, this one excepted."""
    import psutil

    sessions = set(sessions)
    found = []
    for process in psutil.process_iter():
        with suppress(psutil.Error, OSError):  # gone meanwhile
            if (
                process.pid != os.getpid()
                and os.getsid(process.pid) in sessions
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(process)
    return found


def stop(processes: Iterable[subprocess.Popen], grace: float = 20.0) -> None:
    """SIGTERM every process group, then SIGKILL whatever is left after ``grace`` seconds; then
    SIGKILL whatever is left in the processes' sessions until nothing is.

    Every process started with ``start_new_session`` (``start``, the Connect server) leads a
    session that all its descendants stay in, unless one calls setsid: a task process has a
    process group of its own (Airflow's supervisor makes one, so that a task's children get its
    signals) and, once its scheduler is gone, parent 1, so neither the components' process
    groups nor their trees of children reach it; its session does. Linux does not reuse a pid
    that is still some process's session id, so the sweep cannot hit a stranger. Simpler than
    the alternatives: a death signal (PR_SET_PDEATHSIG) follows the thread that forked, not the
    process, and must be set in every fork Airflow makes; a subreaper must be the deployment's
    own process and reap for it (pytest's, for the test deployment); the environment is no
    mark, since setproctitle overwrites what /proc shows of it."""
    import psutil

    processes = list(processes)
    sessions = {process.pid for process in processes}
    for process in processes:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        with suppress(subprocess.TimeoutExpired):
            process.wait(max(0.0, deadline - time.monotonic()))
    for process in processes:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 30
    while left := in_sessions(sessions):  # again for any that a dying one forked
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"processes of the deployment outlived SIGKILL: {[p.pid for p in left]}"
            )
        for process in left:
            with suppress(psutil.Error):
                process.kill()
        # a killed orphan is parent 1's to reap: wait until it is gone or a zombie
        psutil.wait_procs(left, timeout=1)


def healthy(url: str) -> bool:
    """Whether the API server answers and says the metadata DB and every component are healthy."""
    import httpx

    try:
        health = httpx.get(f"{url}/api/v2/monitor/health", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return False
    return all(
        health.get(part, {}).get("status") == "healthy"
        for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")
    )


def prepare(connect_port: int | None) -> tuple[dict[str, str], Path, str | None]:
    """Everything before the components start: the environment, ``airflow db migrate``, the
    settings in ``airflow.cfg``, the Connect server's token, the connections, the login. Returns
    the environment, the passwords file and the token (None without a Connect server)."""
    env = configure()
    migrate(env)
    # every Airflow setting these processes run with, also those with no default here (a
    # deployment's sql_alchemy_conn_async), so that the CLI by hand sees the same
    write_config({**{k: v for k, v in os.environ.items() if k.startswith("AIRFLOW__")}, **env})
    token = ensure_connect_token(env) if connect_port else None
    ensure_connections(env, connect_port, token)
    return env, ensure_password(env), token


def main(argv: list[str] | None = None) -> int:
    """``make airflow``: prepare, then run a Spark Connect server and the components until Ctrl-C
    or one dies. For a container per component (``docker/compose.yaml``): ``init`` prepares
    and exits, ``run COMPONENT`` runs one component on the same settings."""
    import argparse

    from rsp_jobs.spark import connect_server

    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.orchestrate.airflow_env", description=main.__doc__
    )
    steps = parser.add_subparsers(dest="step")
    steps.add_parser(
        "init", help="migrate, write airflow.cfg, add the connections and the login; then exit"
    )
    one = steps.add_parser("run", help="run one Airflow component in the foreground")
    one.add_argument("component", choices=COMPONENTS)
    args = parser.parse_args(argv)
    import rsp_jobs

    if rsp_jobs.SETTINGS_ERROR is not None:  # every component would read the same broken file
        print(f"error: {rsp_jobs.SETTINGS_ERROR}", file=sys.stderr)
        return 2
    port = int(os.environ.get("RSP_SPARK_CONNECT_PORT") or connect_server.DEFAULT_PORT)
    os.umask(UMASK)
    if args.step == "run":
        env = configure()
        os.execve(airflow_command()[0], component_command(args.component), {**os.environ, **env})
    if os.geteuid() == 0:
        print(
            "warning: running as root: every task, and every Python function a Spark job runs, "
            "runs as root; run the deployment as an ordinary user",
            file=sys.stderr,
            flush=True,
        )
    env, passwords, token = prepare(port)
    if args.step == "init":
        print(
            f"Airflow is prepared in {env['AIRFLOW_HOME']}: login {env['RSP_AIRFLOW_USER']}, password in "
            f"{passwords}",
            flush=True,
        )
        return 0
    if token is None:  # prepare makes one for any Connect port but 0
        raise SystemExit(
            f"RSP_SPARK_CONNECT_PORT={port}: the deployment needs a Spark Connect port"
        )
    # the components have their own process groups: a `kill` or a closed terminal must stop them too
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: sys.exit(0))
    logs = Path(env["AIRFLOW_HOME"]) / "logs"
    url = f"http://localhost:{env['AIRFLOW__API__PORT']}"
    print(f"The platform's {settings.in_use()} (every component reads the same)", flush=True)
    print(
        f"Starting the Spark Connect server on port {port} (log {logs}/spark-connect.log)",
        flush=True,
    )
    processes = {}
    try:
        processes["spark-connect"] = connect_server.start(
            port, logs / "spark-connect.log", token=token, env={**os.environ, **env}, umask=UMASK
        )
        processes.update(start(env, logs))
        print(
            f"Starting Airflow: DAGs from {env['AIRFLOW__CORE__DAGS_FOLDER']}, logs in "
            f"{logs}/<component>.log; Ctrl-C stops it.",
            flush=True,
        )
        ready = False
        while not (dead := [name for name, p in processes.items() if p.poll() is not None]):
            if not ready and (ready := healthy(url)):
                print(
                    f"Airflow is ready: {url}  login: {env['RSP_AIRFLOW_USER']}, password in "
                    f"{passwords}",
                    flush=True,
                )
            time.sleep(1)
        print(
            f"{', '.join(dead)} exited: see {logs}/{dead[0]}.log; stopping Airflow", file=sys.stderr
        )
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop(processes.values())


if __name__ == "__main__":
    sys.exit(main())
