"""Reaching the frame store: its URL from the environment, one engine per URL, write
transactions, and the Alembic upgrade that brings a store, empty or at an older revision, to
the current schema (forward only, never dropping anything).

SQLite is the embedded default, so its engines are set up as a single-file system of record:
foreign keys enforced, WAL (readers do not block the writer), and real transactions: sqlite3's
legacy mode would run SELECTs outside the transaction and DDL in autocommit.
"""
from __future__ import annotations

import functools
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, create_engine, event, make_url, text

from rsp_jobs import settings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_IMMEDIATE = "rsp_sqlite_begin_immediate"
# the pg_advisory_xact_lock key that serialises concurrent upgrades of one PostgreSQL database
_UPGRADE_LOCK = int.from_bytes(b"rspstore", "big")


def store_url() -> str:
    """``RSP_STORE_URL``, default a SQLite file in the project home."""
    return os.environ.get("RSP_STORE_URL") or f"sqlite:///{settings.home_dir() / 'store.sqlite'}"


def engine(url: Optional[str] = None) -> Engine:
    """The engine of a store URL (default ``store_url()``), created once per URL."""
    return _engine(url or store_url())


@functools.cache
def _engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    eng = create_engine(parsed, connect_args={"timeout": 60})
    event.listen(eng, "connect", _sqlite_connect)
    event.listen(eng, "begin", _sqlite_begin)
    return eng


def _sqlite_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # sqlite3 stops issuing BEGIN; _sqlite_begin does
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA synchronous = NORMAL")  # durable at checkpoints, consistent always (WAL)
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(_IMMEDIATE)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextmanager
def write_transaction(eng: Engine) -> Iterator[Connection]:
    """A transaction that will write: on SQLite it takes the write lock up front (BEGIN
    IMMEDIATE), so what it reads cannot change before it writes and a concurrent writer waits
    instead of failing halfway. Commits on success, rolls back on any exception."""
    with eng.connect() as conn:
        conn = conn.execution_options(**{_IMMEDIATE: True})
        with conn.begin():
            yield conn


def alembic_config(url: Optional[str] = None) -> Config:
    """Alembic's configuration for a store, without an ini file: the migrations ship in the
    package. Also for Alembic commands run from Python, e.g.
    ``command.revision(alembic_config(), message="...", autogenerate=True)``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["url"] = url or store_url()
    return config


def upgrade(url: Optional[str] = None) -> Optional[str]:
    """Apply every migration the store lacks, in one transaction; returns the revision reached."""
    url = url or store_url()
    config = alembic_config(url)
    with write_transaction(engine(url)) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _UPGRADE_LOCK})
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    return current_revision(url)


def current_revision(url: Optional[str] = None) -> Optional[str]:
    """The store's Alembic revision, None for a store never migrated."""
    with engine(url).connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
