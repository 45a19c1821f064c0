"""The answers pages inside Airflow: the app the plugin mounts, authenticated and authorized by
Airflow's own auth manager, and the frame store the deployment's tasks write.

Airflow does not authenticate a plugin's FastAPI app: it is mounted beside the API, whose
authentication is a dependency of the API's routers, which a mounted app does not inherit. So
every page asks Airflow's ``get_user`` for the caller, as the API does: the bearer token of an
API client, else the ``_token`` cookie the UI's login sets (the nav entry's frame sends it, being
of the same origin); none, or an invalid or expired one, is a 401 or 403 before anything is
read. What the user may then see is what the auth manager lets them read of DAG runs: a query's
windows, lineage and quarantined input need read access to the runs of that query's DAG; the
Data Docs site, which mixes every DAG's checks, needs read access to DAG runs in general.

Airflow is imported per request, not with this module: Airflow loads plugins in the scheduler
and the task processes too, where the API's modules are seconds of imports for nothing.
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from rsp_jobs.ui.app import MayRead, create_app

URL_PREFIX = "/rsp"


async def airflow_access(request: Request) -> MayRead:
    """The caller as Airflow authenticates the API's requests (raising 401 or 403), and what
    the auth manager lets them read: the runs of a DAG (``None``: of DAGs in general)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import (
        DagAccessEntity,
        DagDetails,
    )
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi.security import HTTPBearer

    credentials = await HTTPBearer(auto_error=False)(request)
    user = await get_user(request, _oauth_token=None, bearer_credentials=credentials)
    manager = get_auth_manager()

    def may_read(dag_id: str | None) -> bool:
        return manager.is_authorized_dag(
            method="GET",
            access_entity=DagAccessEntity.RUN,
            details=DagDetails(id=dag_id),
            user=user,
        )

    return may_read


def store_url() -> str | None:
    """The frame store the tasks write: ``RSP_STORE_URL``, else the ``rsp_store`` connection
    (read from the metadata database, which the API server reaches), else the default store."""
    from airflow.exceptions import AirflowNotFoundException
    from airflow.models import Connection

    from rsp_jobs.orchestrate import connections

    def from_metadata(conn_id: str):
        try:
            return Connection.get_connection_from_secrets(conn_id)
        except AirflowNotFoundException:
            return None

    return connections.store_url(from_metadata)


def answers_app() -> FastAPI:
    return create_app(airflow_access, store_url)
