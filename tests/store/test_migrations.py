"""The schema is Alembic's: an empty store upgrades to head, the migrations build exactly the
models, and a later revision applies on top of a store that already holds data, keeping it."""
from __future__ import annotations

import shutil
from textwrap import dedent

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, inspect, select
from sqlalchemy.exc import IntegrityError

from rsp_jobs.store import db, frames
from rsp_jobs.store.models import Base, Frame, FrameTriple

TABLES = {"streams", "frames", "frame_triples", "window_results", "activities", "activity_used",
          "activity_generated", "quality_results", "quarantine"}


def head() -> str:
    return ScriptDirectory.from_config(db.alembic_config("sqlite://")).get_current_head()


def test_an_empty_store_upgrades_to_head_and_upgrading_again_changes_nothing(store_url, caplog):
    assert db.current_revision(store_url) is None
    with caplog.at_level("INFO", logger="alembic"):
        assert db.upgrade(store_url) == head()
    assert "Running upgrade" in caplog.text  # a real migration says what it does
    caplog.clear()
    with caplog.at_level("INFO", logger="alembic"):
        assert db.upgrade(store_url) == head()
    assert caplog.text == ""  # at the head: no Alembic run, nothing in the task's log
    inspector = inspect(db.engine(store_url))
    assert TABLES <= set(inspector.get_table_names())
    assert {u["name"] for u in inspector.get_unique_constraints("frames")} == {
        "uq_frames_stream_id_ts", "uq_frames_frame_iri"}
    assert {u["name"] for u in inspector.get_unique_constraints("window_results")} == {
        "uq_window_results_query_iri_window_close"}


def test_the_migrations_build_exactly_the_models(store):
    with store.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


SECOND_REVISION = dedent('''
    """A later change: a column, and a constraint SQLite can only add by rebuilding the table."""
    from alembic import op
    import sqlalchemy as sa

    revision = "later"
    down_revision = "{down}"
    branch_labels = None
    depends_on = None


    def upgrade():
        op.add_column("streams", sa.Column("title", sa.Text(), nullable=True))
        with op.batch_alter_table("frames") as batch:
            batch.create_check_constraint("triple_count_positive", "triple_count > 0")
''')


def test_a_later_revision_applies_on_a_store_with_data_and_keeps_it(store_url, csrbench_batch, tmp_path,
                                                                     monkeypatch):
    scripts = tmp_path / "migrations"
    shutil.copytree(db.MIGRATIONS, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "later_change.py").write_text(SECOND_REVISION.format(down=head()))
    first = head()
    monkeypatch.setattr(db, "MIGRATIONS", scripts)

    command.upgrade(db.alembic_config(store_url), first)
    assert db.current_revision(store_url) == first
    engine = db.engine(store_url)
    frames.load_batch(engine, csrbench_batch)

    assert db.upgrade(store_url) == "later"
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Frame)) == csrbench_batch.frames
        # rebuilding `frames` must not cascade into its triples (SQLite drops the old table)
        assert conn.scalar(select(func.count()).select_from(FrameTriple)) == len(csrbench_batch.elements)
    assert "title" in {c["name"] for c in inspect(engine).get_columns("streams")}
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(Frame.__table__.update().values(triple_count=0))
    last = frames.last_frame(engine, csrbench_batch.stream)
    assert last is not None and last.triple_count > 0


def test_revision_0010_lets_an_activity_use_a_background_file_and_still_refuses_unknown_kinds(store):
    """SQLite rebuilds the two link tables to change their CHECK; PostgreSQL alters it."""
    from datetime import datetime, timezone

    from rsp_jobs.store.models import Activity, ActivityUsed

    with store.begin() as conn:
        activity = conn.execute(Activity.__table__.insert().values(
            iri="urn:test:activity", kind="window_evaluation", started_at=datetime.now(timezone.utc),
            status="success", entailment="rdfs", background=["urn:test:g=/tmp/g.ttl"])
            .returning(Activity.__table__.c.id)).scalar_one()
        conn.execute(ActivityUsed.__table__.insert().values(activity_id=activity, entity_iri="file:///tmp/g.ttl",
                                                            entity_kind="background", checksum="0" * 64))
    with pytest.raises(IntegrityError), store.begin() as conn:
        conn.execute(ActivityUsed.__table__.insert().values(activity_id=activity, entity_iri="file:///tmp/h",
                                                            entity_kind="bogus"))
    with store.connect() as conn:
        assert conn.execute(select(Activity.background)).scalar_one() == ["urn:test:g=/tmp/g.ttl"]
