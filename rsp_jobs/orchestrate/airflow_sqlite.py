"""Connection arguments for Airflow's own SQLite database (the embedded default), named by
``[database] sql_alchemy_connect_args`` and ``sql_alchemy_connect_args_async``.

The scheduler, the API server's REST and execution endpoints and the DAG processor all write
to one SQLite file, and SQLite lets one writer in at a time. Python's default wait for the lock
is 5 s: on a loaded 2-core machine a writer holds it that long now and then, and the request
that waited failed with "database is locked" (a demo's ``PATCH /api/v2/dags/...`` answered 500
after 5.04 s). A minute's wait turns those failures into a pause. Two dicts, since Airflow adds
``check_same_thread`` to the synchronous one in place. Nothing here may import Airflow: Airflow
imports this while it configures itself."""

SYNC = {"timeout": 60}
ASYNC = {"timeout": 60}
