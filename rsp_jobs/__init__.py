"""The RSP platform's engine and jobs.

The project logs what its jobs do under the ``rsp`` logger (``rsp.run``, ``rsp.ingest``,
``rsp.alerts``, ``rsp.spark``) at INFO, whatever the root logger's level: a DAG task's log shows
it; a program with no logging configured (``rsp`` on a terminal) prints only warnings. Great
Expectations' per-call INFO lines are held back to warnings (``quality/validate.py``).
"""

import logging

logging.getLogger("rsp").setLevel(logging.INFO)
