"""One project settings file (``rsp.toml`` or ``RSP_SETTINGS``) read by ``rsp``, the DAG
processor and the tasks alike; the environment overrides it, relative paths are from its folder,
and a key that is no setting or a secret is refused naming the file. Each case runs in a process
of its own, as a component does: the file is read when ``rsp_jobs`` is imported."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rsp_jobs import settings

RSP = str(Path(sys.executable).with_name("rsp"))


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("RSP_QUERIES_DIR", "RSP_QUARANTINE_POLICY")}
    return subprocess.run(args, env={**clean, **env}, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path) -> Path:
    """A settings file in a folder of its own, naming a queries folder beside it."""
    folder = tmp_path / "project"
    (folder / "my-queries").mkdir(parents=True)
    (folder / "rsp.toml").write_text('queries_dir = "my-queries"\nquarantine_policy = "fail"\n')
    return folder


def test_rsp_reads_the_file_from_any_folder_and_the_environment_overrides_it(project, tmp_path):
    env = {"RSP_SETTINGS": str(project / "rsp.toml")}
    shown = _run([RSP, "settings"], env, cwd=tmp_path)  # not the file's folder
    assert shown.returncode == 0, shown.stderr
    assert f"settings {project / 'rsp.toml'}; queries {project / 'my-queries'};" in shown.stdout
    assert f"RSP_QUERIES_DIR={project / 'my-queries'}  (file)" in shown.stdout
    assert "RSP_QUARANTINE_POLICY=fail  (file)" in shown.stdout
    overridden = _run([RSP, "settings"], {**env, "RSP_QUARANTINE_POLICY": "warn"}, cwd=tmp_path)
    assert "RSP_QUARANTINE_POLICY=warn  (environment)" in overridden.stdout
    none = _run([RSP, "settings"], {"RSP_SETTINGS": "none"}, cwd=tmp_path)
    assert none.stdout.startswith("no settings file (environment and defaults); queries ")


@pytest.mark.parametrize("line, message", [
    ('queries_folder = "q"', r"rsp\.toml: queries_folder is no setting \(the settings are: .*queries_dir"),
    ('airflow_password = "hunter2"', r"rsp\.toml: airflow_password: a secret is not kept in the settings file"),
    ('store_url = "postgresql+psycopg://rsp:hunter2@db/rsp"', r"rsp\.toml: store_url: the URL carries a password"),
    ("max_windows = [1]", r"rsp\.toml: max_windows: a string, number or boolean"),
    ("queries_dir = ", r"rsp\.toml: not a TOML settings file"),
])
def test_a_bad_settings_file_stops_rsp_naming_the_file_and_key(project, line, message):
    (project / "rsp.toml").write_text(line + "\n")
    done = _run([RSP, "settings"], {"RSP_SETTINGS": str(project / "rsp.toml")}, cwd=project)
    assert done.returncode == 2 and re.search(message, done.stderr), done.stderr
    assert "hunter2" not in done.stderr  # a refused secret is not echoed
    assert "Traceback" not in done.stderr


@pytest.mark.airflow
def test_the_dag_processor_takes_its_queries_folder_from_the_file(project, tmp_path):
    repo = settings.REPO_ROOT
    (project / "my-queries" / "streams.toml").write_text((repo / "queries" / "streams.toml").read_text())
    source = (repo / "queries" / "citybench" / "congestion_by_segment.rsp").read_text()
    (project / "my-queries" / "mine").mkdir()
    (project / "my-queries" / "mine" / "my_segments.rsp").write_text(
        source.replace("congestion_by_segment", "my_segments"))
    script = ("from airflow.dag_processing.dagbag import DagBag; "
              f"b = DagBag(dag_folder={str(repo / 'dags')!r}); print(sorted(b.dag_ids)); print(b.import_errors)")
    done = _run([sys.executable, "-c", script], {"RSP_SETTINGS": str(project / "rsp.toml")}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dags, errors = done.stdout.strip().splitlines()[-2:]
    assert "'my_segments'" in dags and "'congestion_by_segment'" not in dags and errors == "{}"
    (project / "rsp.toml").write_text("queries = 1\n")  # broken: every DAG is lost, the error names the file
    broken = _run([sys.executable, "-c", script], {"RSP_SETTINGS": str(project / "rsp.toml")}, cwd=tmp_path)
    assert broken.stdout.strip().splitlines()[-2] == "[]"
    assert "rsp.toml: queries is no setting" in broken.stdout.strip().splitlines()[-1]


def test_every_setting_the_file_takes_is_documented_and_every_documented_one_is_taken():
    table = (settings.REPO_ROOT / "docs" / "operations" / "settings.md").read_text()
    documented = set(re.findall(r"`(RSP_[A-Z_]+)`", table.split("## ", 1)[0]))
    developer_only = {"RSP_REGOLD", "RSP_STRESS", "RSP_SETTINGS"}
    assert documented - developer_only == settings.FILE_SETTINGS | settings.SECRET_SETTINGS
