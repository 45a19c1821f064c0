"""Reaching the frame store: its URL from the environment, one engine per URL, write
transactions, and the Alembic upgrade that brings a store, empty or at an older revision, to
the current schema (forward only, never dropping anything). The store runs on SQLite or
PostgreSQL (../shared/DESIGN.md), nothing else.

SQLite is the embedded default, so its engines are set up as a single-file system of record:
foreign keys enforced, WAL (readers do not block the writer), and real transactions: sqlite3's
legacy mode would run SELECTs outside the transaction and DDL in autocommit.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, make_url, text

from rsp_jobs import settings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_IMMEDIATE = "rsp_sqlite_begin_immediate"
# the pg_advisory_xact_lock key that serialises concurrent upgrades of one PostgreSQL database
_UPGRADE_LOCK = int.from_bytes(b"rspstore", "big")


def store_url(home: Path | None = None) -> str:
    """``RSP_STORE_URL``, default a SQLite file in the project home (``home``, else ``RSP_HOME``)."""
    return (
        os.environ.get("RSP_STORE_URL")
        or f"sqlite:///{(home or settings.home_dir()) / 'store.sqlite'}"
    )


def engine(url: str | None = None) -> Engine:
    """The engine of a store URL (default ``store_url()``), created once per URL."""
    return _engine(url or store_url())


@functools.cache
def _engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        # a new store readable by its owner only, whatever the umask (SQLite gives the WAL and
        # shared-memory files the database's mode); an existing one keeps its mode. A file: URI
        # names its file its own way and is left to SQLite.
        with suppress(FileExistsError):
            if not parsed.query.get("uri"):
                os.close(os.open(parsed.database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    eng = create_engine(parsed, connect_args={"timeout": 60})
    event.listen(eng, "connect", _sqlite_connect)
    event.listen(eng, "begin", _sqlite_begin)
    return eng


def _sqlite_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # sqlite3 stops issuing BEGIN; _sqlite_begin does
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA journal_mode = WAL")
    # with WAL, a power cut may lose the last commits but never consistency; loads are re-runnable
    cursor.execute("PRAGMA synchronous = NORMAL")
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


def alembic_config(url: str | None = None) -> Config:
    """Alembic's configuration for a store, without an ini file: the migrations ship in the
    package. Also for Alembic commands run from Python, e.g.
    ``command.revision(alembic_config(), message="...", autogenerate=True)``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["url"] = url or store_url()
    return config


def upgrade(url: str | None = None) -> str | None:
    """Apply every migration the store lacks, in one transaction; returns the revision reached.
    A store already at the head is left alone (no Alembic run, whose INFO lines about its
    dialect would otherwise open every task's log)."""
    config = alembic_config(url)
    if current_revision(url) != ScriptDirectory.from_config(config).get_current_head():
        command.upgrade(config, "head")
    return current_revision(url)


def current_revision(url: str | None = None) -> str | None:
    """The store's Alembic revision, None for a store never migrated (read without the INFO
    lines Alembic logs about the dialect whenever it looks at a connection)."""
    quiet = logging.getLogger("alembic.runtime.migration")
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        with engine(url).connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        quiet.setLevel(level)


@contextmanager
def migration_transaction(url: str) -> Iterator[Connection]:
    """The one transaction migrations run in (``migrations/env.py``).

    PostgreSQL: an advisory lock makes concurrent upgrades wait for each other. SQLite: an
    ALTER that SQLite cannot do in place copies the table, drops the old one and renames the
    copy; with foreign keys enforced that drop would cascade (deleting every frame's triples
    when ``frames`` is rebuilt), so they are off for the migration and checked before commit,
    as SQLite's documented procedure for schema changes says.
    """
    with engine(url).connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:  # only outside a transaction does this pragma take effect
            driver_connection(conn).execute("PRAGMA foreign_keys = OFF")
        try:
            with conn.execution_options(**{_IMMEDIATE: True}).begin():
                if not sqlite:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _UPGRADE_LOCK})
                yield conn
                if sqlite and (broken := conn.exec_driver_sql("PRAGMA foreign_key_check").all()):
                    raise RuntimeError(
                        f"the migration left rows with dangling foreign keys: {broken[:5]}"
                    )
        finally:
            if sqlite:
                driver_connection(conn).execute("PRAGMA foreign_keys = ON")


def driver_connection(conn: Connection) -> Any:
    """The driver's own connection under ``conn`` (sqlite3's, psycopg's), for what SQLAlchemy
    does not say: pragmas outside a transaction, COPY."""
    driver = conn.connection.driver_connection
    if driver is None:  # SQLAlchemy's connection was invalidated or closed
        raise RuntimeError("the store connection has no driver connection left")
    return driver


def chunks(items: list, size: int = 500):
    """``items`` in slices of ``size``: ``IN (...)`` lists and bulk inserts stay under SQLite's
    and PostgreSQL's limits on parameters per statement."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
