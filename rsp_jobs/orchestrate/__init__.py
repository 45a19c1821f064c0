"""Orchestration: what the Airflow DAGs in ``dags/`` run. DAG files stay thin (schedules, assets,
wiring); the registry of queries, the micro-batch tasks, the watermark trigger and the ingest of
landing files live here, testable without a scheduler."""
