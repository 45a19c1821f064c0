"""The RSP answers pages in the Airflow UI (``rsp_jobs/ui``): a FastAPI app under ``/rsp`` of
the API server and a nav entry that shows it. ``make airflow`` and the test deployment point
``[core] plugins_folder`` here (``rsp_jobs/orchestrate/airflow_env.py``)."""

from typing import ClassVar

from airflow.plugins_manager import AirflowPlugin

from rsp_jobs.ui.airflow import URL_PREFIX, answers_app


class RspAnswersPlugin(AirflowPlugin):
    name = "rsp_answers"
    fastapi_apps: ClassVar = [
        {"app": answers_app(), "url_prefix": URL_PREFIX, "name": "RSP answers"}
    ]
    # a top-level nav entry: the UI shows href in a frame at /plugin/<url_route>
    external_views: ClassVar = [
        {
            "name": "Answers",
            "href": f"{URL_PREFIX}/",
            "url_route": "rsp-answers",
            "destination": "nav",
            "nav_top_level": True,
        }
    ]
