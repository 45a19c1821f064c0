"""The platform's DAGs: one per registered query under ``queries/`` (and an alert DAG for each
query with an ``[alert]`` table), one ingest DAG per stream of ``queries/streams.toml``; made by
``rsp_jobs.orchestrate.dag_factory``. A file that cannot become a DAG is left out here and
reported by ``rsp_query_errors.py``, so that Airflow keeps the other DAGs active."""

from rsp_jobs.orchestrate.dag_factory import build

globals().update(build()[0])
