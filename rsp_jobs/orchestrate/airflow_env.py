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
from typing import Optional

from rsp_jobs import settings
from rsp_jobs.orchestrate import airflow_sqlite

PASSWORDS_FILE = "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")


def environment(home: Optional[Path] = None, current: Mapping[str, str] = os.environ) -> dict[str, str]:
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
    }
    conn = "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"
    if (current.get(conn) or defaults[conn]).startswith("sqlite"):  # wait for its lock: see airflow_sqlite
        defaults["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS"] = f"{airflow_sqlite.__name__}.SYNC"
        defaults["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC"] = f"{airflow_sqlite.__name__}.ASYNC"
    return {key: current.get(key) or value for key, value in defaults.items()}


def configure(home: Optional[Path] = None) -> dict[str, str]:
    """Apply ``environment()`` to this process (before importing Airflow); returns it."""
    env = environment(home)
    os.environ.update(env)
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    return env


def airflow_command(*args: str) -> list[str]:
    """The ``airflow`` CLI of this interpreter's environment."""
    return [str(Path(sys.executable).with_name("airflow")), *args]


def migrate(env: dict[str, str]) -> None:
    """Create or upgrade Airflow's metadata database (``airflow db migrate``)."""
    subprocess.run(airflow_command("db", "migrate"), env={**os.environ, **env}, check=True,
                   stdout=subprocess.DEVNULL)


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
        end = next((i for i in range(header + 1, len(lines)) if lines[i].startswith("[")), len(lines))
        at = next((i for i in range(header + 1, end) if lines[i].split("=", 1)[0].strip() == key), None)
        if at is None:
            lines.insert(header + 1, setting)
        else:
            lines[at] = setting
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)  # it holds the fernet key and the JWT secret
    return path


def ensure_connections(env: dict[str, str], connect_port: Optional[int] = None) -> None:
    """The platform's connections (``platform_connections``) in Airflow's metadata database, so
    that Admin -> Connections shows them and can change them; each left alone when it exists."""
    wanted = platform_connections(env, connect_port)
    run = {**os.environ, **env}
    listed = subprocess.run(airflow_command("connections", "list", "-o", "json"), env=run, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    table = next((line for line in reversed(listed) if line.startswith("[")), "[]")  # after any warning
    existing = {c["conn_id"] for c in json.loads(table)}
    missing = {name: fields for name, fields in wanted.items() if name not in existing}
    if missing:
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump(missing, file)
            file.flush()
            subprocess.run(airflow_command("connections", "import", file.name), env=run, check=True,
                           stdout=subprocess.DEVNULL)


def platform_connections(env: dict[str, str], connect_port: Optional[int] = None) -> dict[str, dict]:
    """The connections the platform's tasks read, as ``airflow connections import`` takes them:

    - ``rsp_spark``, the Spark the tasks use: the Spark provider's ``spark_connect`` type on the
      Connect server at ``RSP_SPARK_CONNECT_HOST`` (default 127.0.0.1) and ``connect_port`` (what
      ``make airflow`` runs), else its ``spark`` type on ``local[2]`` (a JVM per task); not made
      when ``AIRFLOW_CONN_RSP_SPARK`` is set (the environment wins over the database);
    - ``rsp_store``, the frame store: ``RSP_STORE_URL`` or the SQLite store under the project
      home, as a ``sqlite`` or ``postgres`` connection (read by ``connections.store_url``)."""
    from rsp_jobs.store import db

    wanted = {}
    spark = settings.spark_conn_id()
    if not os.environ.get(f"AIRFLOW_CONN_{spark.upper()}"):
        where = ({"conn_type": "spark_connect", "host": os.environ.get("RSP_SPARK_CONNECT_HOST") or "127.0.0.1",
                  "port": connect_port} if connect_port else
                 {"conn_type": "spark", "host": settings.DEFAULT_SPARK_MASTER})
        wanted[spark] = {**where, "description": "Spark for the RSP jobs (tasks and rsp evaluate)"}
    wanted[settings.store_conn_id()] = {**store_connection(db.store_url(Path(env["RSP_HOME"]))),
                                           "description": "The RSP frame store (frames, results, provenance)"}
    return wanted


def store_connection(url: str) -> dict:
    """The Airflow connection (``sqlite`` or ``postgres``) of a store URL."""
    from sqlalchemy import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return {"conn_type": "sqlite", "host": parsed.database}
    fields = {"conn_type": "postgres", "host": parsed.host, "port": parsed.port, "login": parsed.username,
              "password": parsed.password, "schema": parsed.database}
    if parsed.query.get("options"):
        fields["extra"] = json.dumps({"options": parsed.query["options"]})
    return {key: value for key, value in fields.items() if value}


def ensure_password(env: dict[str, str], password: Optional[str] = None) -> Path:
    """Give the UI user a password in the simple auth manager's file (JSON ``{user: password}``):
    ``password`` or ``RSP_AIRFLOW_PASSWORD`` when given, else a random one made once and kept.
    Returns the file, readable by its owner only, since the password is stored in clear."""
    path = Path(env[PASSWORDS_FILE])
    passwords = json.loads(path.read_text() or "{}") if path.exists() else {}
    user = env["RSP_AIRFLOW_USER"]
    password = (password or os.environ.get("RSP_AIRFLOW_PASSWORD") or passwords.get(user)
                or secrets.token_urlsafe(12))
    if passwords.get(user) != password:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**passwords, user: password}) + "\n")
    path.chmod(0o600)
    return path


def start(env: dict[str, str], logs: Path) -> dict[str, subprocess.Popen]:
    """Start every component with its output in ``logs/<component>.log``, each in its own process
    group so that stopping it also stops the task processes and Spark JVMs it started."""
    logs.mkdir(parents=True, exist_ok=True)
    processes = {}
    for name in COMPONENTS:
        with (logs / f"{name}.log").open("ab") as log:
            processes[name] = subprocess.Popen(airflow_command(name), env={**os.environ, **env},
                                               stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True)
    return processes


def stop(processes: Iterable[subprocess.Popen], grace: float = 20.0) -> None:
    """SIGTERM every process group, then SIGKILL whatever is left after ``grace`` seconds."""
    processes = list(processes)
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


def healthy(url: str) -> bool:
    """Whether the API server answers and says the metadata DB and every component are healthy."""
    import httpx

    try:
        health = httpx.get(f"{url}/api/v2/monitor/health", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return False
    return all(health.get(part, {}).get("status") == "healthy"
               for part in ("metadatabase", "scheduler", "triggerer", "dag_processor"))


def prepare(connect_port: Optional[int]) -> tuple[dict[str, str], Path]:
    """Everything before the components start: the environment, ``airflow db migrate``, the
    settings in ``airflow.cfg``, the connections, the login. Returns the environment and the
    passwords file."""
    env = configure()
    migrate(env)
    # every Airflow setting these processes run with, also those with no default here (a
    # deployment's sql_alchemy_conn_async), so that the CLI by hand sees the same
    write_config({**{k: v for k, v in os.environ.items() if k.startswith("AIRFLOW__")}, **env})
    ensure_connections(env, connect_port)
    return env, ensure_password(env)


def main(argv: Optional[list[str]] = None) -> int:
    """``make airflow``: prepare, then run a Spark Connect server and the components until Ctrl-C
    or one dies. For a container per component (``docker/compose.yaml``): ``init`` prepares
    and exits, ``run COMPONENT`` runs one component on the same settings."""
    import argparse

    from rsp_jobs.spark import connect_server

    parser = argparse.ArgumentParser(prog="python -m rsp_jobs.orchestrate.airflow_env", description=main.__doc__)
    steps = parser.add_subparsers(dest="step")
    steps.add_parser("init", help="migrate, write airflow.cfg, add the connections and the login; then exit")
    one = steps.add_parser("run", help="run one Airflow component in the foreground")
    one.add_argument("component", choices=COMPONENTS)
    args = parser.parse_args(argv)
    port = int(os.environ.get("RSP_SPARK_CONNECT_PORT") or connect_server.DEFAULT_PORT)
    if args.step == "run":
        env = configure()
        os.execve(airflow_command()[0], airflow_command(args.component), {**os.environ, **env})
    env, passwords = prepare(port)
    if args.step == "init":
        print(f"Airflow is prepared in {env['AIRFLOW_HOME']}: login {env['RSP_AIRFLOW_USER']}, password in "
              f"{passwords}", flush=True)
        return 0
    # the components have their own process groups: a `kill` or a closed terminal must stop them too
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: sys.exit(0))
    logs = Path(env["AIRFLOW_HOME"]) / "logs"
    url = f"http://localhost:{env['AIRFLOW__API__PORT']}"
    print(f"Starting the Spark Connect server on port {port} (log {logs}/spark-connect.log)", flush=True)
    processes = {"spark-connect": connect_server.start(port, logs / "spark-connect.log")}
    processes.update(start(env, logs))
    print(f"Starting Airflow: DAGs from {env['AIRFLOW__CORE__DAGS_FOLDER']}, logs in "
          f"{logs}/<component>.log; Ctrl-C stops it.", flush=True)
    try:
        ready = False
        while not (dead := [name for name, p in processes.items() if p.poll() is not None]):
            if not ready and (ready := healthy(url)):
                print(f"Airflow is ready: {url}  login: {env['RSP_AIRFLOW_USER']}, password in "
                      f"{passwords}", flush=True)
            time.sleep(1)
        print(f"{', '.join(dead)} exited: see {logs}/{dead[0]}.log; stopping Airflow", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop(processes.values())


if __name__ == "__main__":
    sys.exit(main())
