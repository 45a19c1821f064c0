"""Alembic environment of the frame store. ``rsp_jobs.store.db.upgrade`` hands over its
connection (one transaction, locked against concurrent upgrades); Alembic commands run from
Python with ``db.alembic_config(url)`` (``revision --autogenerate``) connect to that URL here.
Migrations hold plain SQLAlchemy types, never the models' Python-side ones."""
from alembic import context

from rsp_jobs.store import db
from rsp_jobs.store.models import Base, UTCDateTime


def render_item(kind, obj, autogen_context):
    if kind == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def run_migrations(connection) -> None:
    # batch mode lets ALTER TABLE revisions run on SQLite (it copies the table); no-op on PostgreSQL
    context.configure(connection=connection, target_metadata=Base.metadata,
                      render_as_batch=True, render_item=render_item)
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    with db.write_transaction(db.engine(context.config.attributes["url"])) as connection:
        run_migrations(connection)
else:
    run_migrations(connection)
