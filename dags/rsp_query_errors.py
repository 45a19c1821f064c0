"""The registered files that cannot become DAGs, as this file's import error in Airflow (each
named with its line), while ``rsp_dags.py`` loads the DAGs of every other file. This file
defines no DAG: Airflow deactivates the DAGs of a file that fails to import, so the errors must
not be ``rsp_dags.py``'s (``rsp_jobs.orchestrate.dag_factory``)."""

from rsp_jobs.errors import InputError
from rsp_jobs.orchestrate.dag_factory import build, errors_text

if errors := build()[1]:
    raise InputError(errors_text(errors))
