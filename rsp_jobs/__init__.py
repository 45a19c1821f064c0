"""The RSP platform's engine and jobs.

The project logs what its jobs do under the ``rsp`` logger (``rsp.run``, ``rsp.ingest``,
``rsp.alerts``, ``rsp.spark``) at INFO, whatever the root logger's level: a DAG task's log shows
it; a program with no logging configured (``rsp`` on a terminal) prints only warnings. Great
Expectations' per-call INFO lines are held back to warnings (``quality/validate.py``).

Every RDF term is kept as it is written, from file to lake to store to results: RDF 1.1 §3.3
makes two literals the same term only when their lexical forms and datatypes are the same, so
``"01"^^xsd:integer`` is not ``"1"^^xsd:integer`` and ``"1.0E6"^^xsd:double`` stays
``"1.0E6"``. rdflib would otherwise rewrite a literal it parses into its own canonical form (in
the stream parsers, the background graphs and a query's constants alike); values still compare
by value in FILTER, ORDER BY and aggregates, and computed values are written in XSD's
canonical form (``spark/decimals.py``, ``spark/casts.py``).

The project settings file is read here, once per process, before any setting is (``settings``);
a broken one is reported where a component starts (``SETTINGS_ERROR``): ``rsp`` exits naming it,
the DAG file's import error names it.
"""

import logging

import rdflib

from rsp_jobs import errors, settings

logging.getLogger("rsp").setLevel(logging.INFO)
rdflib.NORMALIZE_LITERALS = False

SETTINGS_ERROR: errors.InputError | None = None
try:
    settings.apply_settings_file()
except errors.InputError as exc:
    SETTINGS_ERROR = exc
