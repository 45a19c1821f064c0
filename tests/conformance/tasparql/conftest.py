"""Fixtures of the TA-SPARQL conformance tests: the store (SQLite, and PostgreSQL when it answers)
loaded with ``fig1.trig``, and the same frames as ``rsp export`` writes them, for rdflib."""
from pathlib import Path

import pytest
from rdflib import Dataset

from rsp_jobs.store.tardf import export_stream, import_stream
from tests.store.conftest import pg_admin, store, store_url  # noqa: F401 - fixtures

FIG1 = Path(__file__).with_name("fig1.trig")
STREAMS = ("urn:ohare-rain", "urn:ohare-temp", "urn:champaign-temp", "urn:champaign-rain")


@pytest.fixture
def fig1(store):
    report = import_stream(store, FIG1)
    assert (report.frames_written, report.invariant, report.quarantined) == (21, 5, 0)
    return store


@pytest.fixture
def exported(fig1, tmp_path) -> Dataset:
    dataset = Dataset()
    for i, stream in enumerate(STREAMS):
        path = tmp_path / f"s{i}.trig"
        export_stream(fig1, stream, path)
        dataset.parse(path, format="trig")
    return dataset
