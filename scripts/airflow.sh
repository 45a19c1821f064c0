#!/usr/bin/env bash
# Starts Airflow locally with the project's DAGs and a login (the one command of dags/README.md):
# Airflow home, SQLite metadata DB and logs under the project home ($RSP_HOME, default .rsp/),
# `airflow db migrate`, a password for the user (RSP_AIRFLOW_PASSWORD, else generated once and
# kept in the passwords file it prints), then all components in the foreground; Ctrl-C stops them.
# Everything is overridable with the usual AIRFLOW__SECTION__KEY variables (e.g. AIRFLOW__API__PORT).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m rsp_jobs.orchestrate.airflow_env
