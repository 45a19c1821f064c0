"""Store fixtures: every store test runs on SQLite and, when it answers, on PostgreSQL, each
time on a new store (a SQLite file in the test's directory, a PostgreSQL schema of its own,
dropped afterwards)."""
from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from sqlalchemy import Engine, create_engine, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from rsp_jobs.ingest import csrbench
from rsp_jobs.ingest.rdf_stream import StreamBatch, read_stream_file
from rsp_jobs.store import db

PG_URL = os.environ.get("RSP_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    admin = create_engine(PG_URL, poolclass=NullPool)
    try:
        with admin.connect():
            pass
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        pytest.skip(f"PostgreSQL not reachable at {PG_URL}: store tests ran on SQLite only ({reason})")
    yield admin
    admin.dispose()


@contextmanager
def empty_store_url(backend: str, tmp_path: Path, request, name: str = "store") -> Iterator[str]:
    """The URL of an empty store: a SQLite file, or a PostgreSQL schema made for it and dropped
    afterwards."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / f'{name}.sqlite'}"
        try:
            yield url
        finally:
            db.engine(url).dispose()
        return
    admin = request.getfixturevalue("pg_admin")
    schema = f"rsp_test_{secrets.token_hex(6)}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    url = url.render_as_string(hide_password=False)
    try:
        yield url
    finally:
        db.engine(url).dispose()
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store, once per backend."""
    with empty_store_url(request.param, tmp_path, request) as url:
        yield url


@pytest.fixture
def store(store_url: str) -> Engine:
    """A migrated, empty store."""
    db.upgrade(store_url)
    return db.engine(store_url)


@pytest.fixture(scope="session")
def csrbench_batch(data_dir: Path, tmp_path_factory) -> StreamBatch:
    """The real CSRBench stream: 34 frames, about 15k triples."""
    if not (data_dir / "csrbench" / "stream").is_dir():
        pytest.skip(f"CSRBench stream not found under {data_dir} (set RSP_DATA_DIR)")
    path = csrbench.write_stream(tmp_path_factory.mktemp("csrbench") / "stream.nq")
    return read_stream_file(path, csrbench.STREAM)
