"""``docker/compose.yaml`` is a valid Compose file (the Compose Specification's JSON schema,
``tests/fixtures/compose-spec.json``, from github.com/compose-spec/compose-spec at 170098b: the
development machines have no Docker engine, and Debian's ``docker-compose`` 1.29 predates the
specification's current form), it names only settings and entry points the platform has, and
its Airflow set-up step runs on its own settings, with its two databases on the local
PostgreSQL."""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from sqlalchemy import make_url

from rsp_jobs import settings
from rsp_jobs.orchestrate import airflow_env
from tests.store.conftest import empty_store_url, pg_admin  # noqa: F401 (fixture)

COMPOSE = settings.REPO_ROOT / "docker" / "compose.yaml"
SCHEMA = Path(__file__).parents[1] / "fixtures" / "compose-spec.json"


SECRETS = {"AIRFLOW_DB_PASSWORD": "airflow-secret", "RSP_STORE_DB_PASSWORD": "store-secret",
           "RSP_SPARK_CONNECT_TOKEN": "connect-token"}
VARIABLE = re.compile(r"\$\{(\w+)(?:(:?)([-?])([^}]*))?\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation (``${VAR}``, ``${VAR:-default}``, ``${VAR:?error}``, and without
    the colon), which ``docker compose`` does before it reads the file; an error names the variables."""
    missing = []

    def value(match: re.Match) -> str:
        name, colon, kind, word = match.groups()
        given = env.get(name)
        unset = given is None or (colon and given == "")
        if kind == "?" and unset:
            missing.append(f"{name}: {word}")
            return ""
        return word if kind == "-" and unset else given or ""
    result = VARIABLE.sub(value, text)
    if missing:
        raise ValueError("; ".join(sorted(set(missing))))
    return result


@pytest.fixture(scope="module")
def compose() -> dict:
    """The file as compose reads it, with ``SECRETS`` given as docker/.env would give them."""
    return yaml.safe_load(interpolate(COMPOSE.read_text(), SECRETS))


def test_the_compose_file_follows_the_compose_specification(compose):
    schema = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))  # its $schema: draft 7
    schema.validate(compose)
    broken = copy.deepcopy(compose)
    broken["services"]["spark-master"]["comand"] = broken["services"]["spark-master"].pop("command")
    with pytest.raises(jsonschema.ValidationError, match="comand"):  # the schema does catch a typo
        schema.validate(broken)


def test_it_has_airflow_on_postgresql_spark_and_a_store(compose):
    services = compose["services"]
    assert {"airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer",
            "spark-master", "spark-worker", "spark-connect", "airflow-db", "store-db"} <= set(services)
    env = services["airflow-scheduler"]["environment"]
    assert make_url(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).get_backend_name() == "postgresql"
    assert make_url(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"]).drivername == "postgresql+psycopg_async"
    assert make_url(env["RSP_STORE_URL"]).host == "store-db"
    for name, service in services.items():
        if service.get("image", "").startswith("rsp-platform"):
            assert "rsp-home:/var/lib/rsp" in service["volumes"], name  # one lake and landing for all


def test_it_names_only_settings_and_entry_points_the_platform_has(compose):
    source = "\n".join(p.read_text() for p in (settings.REPO_ROOT / "rsp_jobs").rglob("*.py"))
    components = set(airflow_env.COMPONENTS)
    for name, service in compose["services"].items():
        for variable in service.get("environment", {}):
            if variable.startswith("RSP_"):
                assert f'"{variable}"' in source, f"{name}: {variable} is read nowhere"
        command = service.get("command", [])
        if command[:2] == ["python", "-m"]:
            module = command[2]
            assert (settings.REPO_ROOT / (module.replace(".", "/") + ".py")).is_file(), name
            if module.endswith("airflow_env") and command[3] == "run":
                assert command[4] in components, name
        elif command:
            assert command[0] == "spark-class" and (Path(sys.executable).parent / "spark-class").exists()
    dockerfile = (settings.REPO_ROOT / "docker" / "Dockerfile").read_text()
    for folder in ("rsp_jobs", "dags", "plugins", "queries", "ontology"):
        assert re.search(rf"^COPY {folder} ", dockerfile, re.M), folder


@pytest.mark.postgres
@pytest.mark.airflow
def test_its_airflow_set_up_runs_on_its_settings(compose, tmp_path, request):
    """``airflow_env init`` with the compose environment, the database hosts pointed at the local
    PostgreSQL (a schema each): Airflow migrates on PostgreSQL through psycopg 3, and the
    connections name the Connect server and the store as the services reach them."""
    env = dict(compose["services"]["airflow-init"]["environment"])
    with empty_store_url("postgresql", tmp_path, request, "airflow") as airflow_db, \
            empty_store_url("postgresql", tmp_path, request, "store") as store:
        airflow_url = make_url(airflow_db)
        env.update(AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=airflow_db,
                   AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC=airflow_db.replace("+psycopg:", "+psycopg_async:"),
                   AIRFLOW__DATABASE__SQL_ALCHEMY_SCHEMA=airflow_url.query["options"].split("=", 1)[1],
                   RSP_STORE_URL=store, RSP_HOME=str(tmp_path / "home"), RSP_AIRFLOW_PASSWORD="")
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RSP_"))}
        done = subprocess.run([sys.executable, "-m", "rsp_jobs.orchestrate.airflow_env", "init"],
                              env={**clean, **env}, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        by_hand = {**clean, "AIRFLOW_HOME": str(tmp_path / "home" / "airflow")}  # the CLI, by hand
        found = {}
        for name in ("rsp_spark", "rsp_store"):
            got = subprocess.run(airflow_env.airflow_command("connections", "get", name, "-o", "json"), env=by_hand,
                                 capture_output=True, text=True, timeout=300)
            assert got.returncode == 0, got.stderr[-3000:]
            (found[name],) = json.loads(got.stdout.strip().splitlines()[-1])
    assert (found["rsp_spark"]["conn_type"], found["rsp_spark"]["host"], found["rsp_spark"]["port"]) == \
        ("spark_connect", "localhost", "15002")  # the scheduler is in spark-connect's network namespace
    assert found["rsp_spark"]["password"] == SECRETS["RSP_SPARK_CONNECT_TOKEN"]
    store_url = make_url(store)
    assert (found["rsp_store"]["conn_type"], found["rsp_store"]["host"], found["rsp_store"]["schema"]) == \
        ("postgres", store_url.host, store_url.database)
    assert json.loads((tmp_path / "home" / "airflow" / "passwords.json").read_text())["admin"]  # generated


def test_it_holds_no_password_and_refuses_to_start_without_the_secrets(compose):
    text = COMPOSE.read_text()
    with pytest.raises(ValueError) as refused:
        interpolate(text, {})
    for name in SECRETS:
        assert f"{name}: set {name} in docker/.env" in str(refused.value)
    with pytest.raises(ValueError, match="RSP_SPARK_CONNECT_TOKEN"):  # empty is missing too
        interpolate(text, {**SECRETS, "RSP_SPARK_CONNECT_TOKEN": ""})
    services = compose["services"]
    env = services["airflow-scheduler"]["environment"]
    assert make_url(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).password == SECRETS["AIRFLOW_DB_PASSWORD"]
    assert make_url(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"]).password == SECRETS["AIRFLOW_DB_PASSWORD"]
    assert make_url(env["RSP_STORE_URL"]).password == SECRETS["RSP_STORE_DB_PASSWORD"]
    assert services["airflow-db"]["environment"]["POSTGRES_PASSWORD"] == SECRETS["AIRFLOW_DB_PASSWORD"]
    assert services["store-db"]["environment"]["POSTGRES_PASSWORD"] == SECRETS["RSP_STORE_DB_PASSWORD"]
    # no literal password: with other secrets, every one of them changes
    other = yaml.safe_load(interpolate(text, {k: v + "-2" for k, v in SECRETS.items()}))
    assert make_url(other["services"]["airflow-scheduler"]["environment"]["RSP_STORE_URL"]).password == "store-secret-2"
    for name, service in yaml.safe_load(interpolate(text, SECRETS))["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if "PASSWORD" in key and key != "RSP_AIRFLOW_PASSWORD":
                assert value in SECRETS.values(), (name, key)
            if str(value).startswith("postgresql"):
                assert make_url(value).password in SECRETS.values(), (name, key)


def test_it_publishes_only_the_api_server_and_on_the_hosts_loopback(compose):
    published = {name: service["ports"] for name, service in compose["services"].items() if service.get("ports")}
    assert published == {"airflow-apiserver": ["127.0.0.1:8080:8080"]}  # the Spark master's UI has no login


def test_its_connect_server_asks_for_the_token_on_its_loopback(compose):
    services = compose["services"]
    connect = services["spark-connect"]
    command = connect["command"]
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert connect["environment"]["RSP_SPARK_CONNECT_TOKEN"] == SECRETS["RSP_SPARK_CONNECT_TOKEN"]
    # the connection set up with the token, and the tasks on the server's loopback
    assert services["airflow-init"]["environment"]["RSP_SPARK_CONNECT_TOKEN"] == SECRETS["RSP_SPARK_CONNECT_TOKEN"]
    assert services["airflow-scheduler"]["network_mode"] == "service:spark-connect"
    assert services["airflow-scheduler"]["environment"]["RSP_SPARK_CONNECT_HOST"] == "localhost"
    # the token is for those two only
    holders = {name for name, service in services.items()
               if "RSP_SPARK_CONNECT_TOKEN" in (service.get("environment") or {})}
    assert holders == {"spark-connect", "airflow-init"}
