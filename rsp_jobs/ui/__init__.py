"""Pages for operators in the Airflow UI: the answers of the registered queries, their quality
checks and Data Docs, the lineage of each result and the quarantined input (``app``, over the
readers in ``answers``); ``airflow`` authenticates them with Airflow's auth manager for the
plugin that mounts them (``plugins/rsp_answers.py``)."""
