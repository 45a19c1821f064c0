"""A Spark standalone cluster on this machine, for the cluster bench and the tests: a master and
``workers`` workers on 127.0.0.1, started with the installed pyspark's ``bin/spark-class`` on
free ports.

``standalone_cluster()`` is a context manager yielding a ``Cluster`` (its ``master_url`` is
``spark://127.0.0.1:PORT``) once every worker has registered with the master; on exit it stops
the JVMs and everything they started (executors, Python workers) by process group. Work dirs and
logs live under one directory; failure messages carry the tail of the logs.

The cluster asks for a shared secret (Spark's ``spark.authenticate``): the master, the workers and
every application must hold it, so another account's process on the machine cannot register a
worker or run an application on it. Spark's standalone mode reads it from
``spark-defaults.conf`` in ``SPARK_CONF_DIR``: the cluster writes one, mode 0600, in its own
conf folder, and a driver started with ``Cluster.driver_env()`` (``SPARK_CONF_DIR`` pointing
there) reads it too; the worker hands it to its executors in their environment. It is never a
``--conf`` or ``-D`` option, since a command line is visible to every account.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
REGISTRATION_TIMEOUT = 120.0  # seconds; other Spark jobs may share the machine's two cores
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1: never a proxy


def _get_json(url: str, timeout: float = 10) -> dict:
    with _DIRECT.open(url, timeout=timeout) as response:
        return json.load(response)


class ClusterError(RuntimeError):
    """The cluster did not come up (the message carries the logs' tails)."""


def java_missing() -> str | None:
    """Why Spark cannot start here, or None when a Java runtime is available."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return None
    if shutil.which("java"):
        return None
    return "Java is not installed (no java on PATH and no JAVA_HOME): Spark cannot start"


def spark_home() -> Path:
    """The installed pyspark, which carries Spark's jars and ``bin/spark-class``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@dataclass
class _Daemon:
    name: str
    process: subprocess.Popen
    log: Path
    stopped: bool = False

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            return f"({self.log}: {exc})"
        return "\n".join(text[-lines:])

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM to the whole process group (the JVM and what it started), then SIGKILL."""
        if self.stopped:
            return
        self.stopped = True
        pgid = self.process.pid  # start_new_session: the group is led by the process
        for sig in (signal.SIGTERM, signal.SIGKILL):
            _signal_group(pgid, sig)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace)
            deadline = time.monotonic() + grace
            while _group_exists(pgid) and time.monotonic() < deadline:
                time.sleep(0.2)  # executors and Python workers stopping after the worker


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Cluster:
    master_url: str
    webui_url: str
    directory: Path
    daemons: list[_Daemon] = field(default_factory=list)

    @property
    def conf_dir(self) -> Path:
        """The cluster's ``SPARK_CONF_DIR``: its ``spark-defaults.conf`` holds the secret."""
        return self.directory / "conf"

    def driver_env(self) -> dict[str, str]:
        """What a driver's environment needs to join the cluster: the conf folder whose
        ``spark-defaults.conf`` spark-submit reads (the secret), and the master."""
        return {"SPARK_CONF_DIR": str(self.conf_dir), "RSP_SPARK_MASTER": self.master_url}

    def status(self) -> dict:
        """The master's state as its web UI serves it (``/json/``): workers, active and
        completed applications."""
        return _get_json(self.webui_url + "/json/")

    def logs(self, lines: int = 40) -> str:
        """The tails of the master's and workers' logs, for failure messages."""
        return "\n".join(f"--- {d.name} log {d.log} ---\n{d.tail(lines)}" for d in self.daemons)

    def wait_for_application(self, name: str, timeout: float = 60.0) -> dict:
        """The completed application called ``name`` (the driver exited), once the master lists it."""
        deadline = time.monotonic() + timeout
        state: dict = {}
        while time.monotonic() < deadline:
            state = self.status()
            for app in state.get("completedapps", []):
                if app.get("name") == name:
                    return app
            time.sleep(0.5)
        raise ClusterError(
            f"the master lists no completed application {name!r} after {timeout:.0f} s: "
            f"active {[a.get('name') for a in state.get('activeapps', [])]}, "
            f"completed {[a.get('name') for a in state.get('completedapps', [])]}\n{self.logs()}"
        )


def _start(name: str, args: list[str], directory: Path, env: dict[str, str]) -> _Daemon:
    log = directory / "logs" / f"{name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            env=env,
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return _Daemon(name, process, log)


def _write_secret(conf: Path) -> None:
    """``spark-defaults.conf`` with a new shared secret, readable by this account only."""
    conf.mkdir(exist_ok=True)
    defaults = conf / "spark-defaults.conf"
    defaults.unlink(missing_ok=True)
    fd = os.open(defaults, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(f"spark.authenticate true\nspark.authenticate.secret {secrets.token_hex(32)}\n")


def _environment(directory: Path) -> dict[str, str]:
    conf = directory / "conf"
    _write_secret(conf)  # no spark-env.sh or defaults from elsewhere: only the secret
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SPARK_", "PYSPARK_")) and key not in ("RSP_SPARK_MASTER",)
    }
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOG_DIR": str(directory / "logs"),
            "SPARK_PID_DIR": str(directory),
            "SPARK_WORKER_DIR": str(directory / "work"),
            "SPARK_LOCAL_DIRS": str(directory / "local"),
            "SPARK_DAEMON_MEMORY": "512m",
            # the master and worker only schedule: a quick JIT and a small collector start them faster
            "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            # a port that is taken fails fast and visibly instead of moving to the next one; no REST
            # submission server (its fixed port 6066 would clash between concurrent test runs)
            "SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false",
            "SPARK_WORKER_OPTS": "-Dspark.port.maxRetries=0",
        }
    )
    return env


def _wait_registered(
    master_webui: str, daemons: list[_Daemon], workers: int, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        for daemon in daemons:
            if not daemon.alive():
                raise ClusterError(
                    f"the Spark {daemon.name} exited with code {daemon.process.returncode}"
                )
        try:
            state = _get_json(master_webui + "/json/", timeout=5)
            alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
            if len(alive) >= workers:
                return
            last = f"master {state.get('status')}, workers {[w.get('state') for w in state.get('workers', [])]}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    raise ClusterError(
        f"{workers} workers did not register with the master within {timeout:.0f} s ({last})"
    )


@contextmanager
def standalone_cluster(
    directory: Path | None = None,
    cores: int = 2,
    memory: str = "2g",
    workers: int = 1,
    timeout: float = REGISTRATION_TIMEOUT,
    attempts: int = 3,
) -> Iterator[Cluster]:
    """A master and ``workers`` workers (each ``cores`` cores and ``memory`` for executors) on
    127.0.0.1, asking for a new shared secret; yields when every worker has registered. Work dirs
    and logs under ``directory`` (a temporary directory, removed afterwards, when not given)."""
    reason = java_missing()
    if reason:
        raise ClusterError(reason)
    owned = directory is None
    directory = Path(directory or tempfile.mkdtemp(prefix="spark-cluster-"))
    for sub in ("logs", "work", "local"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    env = _environment(directory)
    cluster = None
    try:
        for attempt in range(1, attempts + 1):
            port, webui = free_port(), free_port()
            cluster = Cluster(f"spark://{HOST}:{port}", f"http://{HOST}:{webui}", directory)
            cluster.daemons.append(
                _start(
                    f"master-{attempt}",
                    [
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        HOST,
                        "--port",
                        str(port),
                        "--webui-port",
                        str(webui),
                    ],
                    directory,
                    env,
                )
            )
            for number in range(1, workers + 1):
                work = (
                    directory / "work" / f"worker-{number}" if workers > 1 else directory / "work"
                )
                work.mkdir(parents=True, exist_ok=True)
                cluster.daemons.append(
                    _start(
                        f"worker-{number}-{attempt}" if workers > 1 else f"worker-{attempt}",
                        [
                            "org.apache.spark.deploy.worker.Worker",
                            cluster.master_url,
                            "--host",
                            HOST,
                            "--port",
                            str(free_port()),
                            "--webui-port",
                            str(free_port()),
                            "--cores",
                            str(cores),
                            "--memory",
                            memory,
                            "--work-dir",
                            str(work),
                        ],
                        directory,
                        env,
                    )
                )
            try:
                _wait_registered(cluster.webui_url, cluster.daemons, workers, timeout)
                break
            except ClusterError as exc:
                died = any(not d.alive() for d in cluster.daemons)
                logs = cluster.logs()
                for daemon in reversed(cluster.daemons):
                    daemon.stop()
                # a port taken between choosing and binding it: try again on other ports
                if attempt < attempts and died and "BindException" in logs:
                    continue
                raise ClusterError(f"{exc}\n{logs}") from None
        assert cluster is not None  # attempts >= 1
        yield cluster
    finally:
        if cluster is not None:
            for daemon in reversed(cluster.daemons):  # workers (and their executors) first
                daemon.stop()
        if owned:
            shutil.rmtree(directory, ignore_errors=True)
