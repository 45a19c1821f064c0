"""The frame store: streams, frames and their triples, window results, provenance (activities,
what they used and generated), quality results and quarantined input.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Forward only: the frame store is the system of record, so a mistake is fixed by a new revision.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = sa.DateTime(timezone=True)
ENTITY_KINDS = "entity_kind IN ('frame', 'lake_file', 'query', 'result')"


def upgrade() -> None:
    op.create_table(
        "streams",
        sa.Column("id", ID, nullable=False),
        sa.Column("iri", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=True),
        sa.Column("watermark", UTC, nullable=True),
        sa.Column(
            "allowed_lateness_ms", sa.BigInteger(), server_default=sa.text("0"), nullable=False
        ),
        sa.Column("created_at", UTC, nullable=False),
        sa.CheckConstraint("kind IN ('input', 'derived')", name=op.f("ck_streams_kind")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_streams")),
        sa.UniqueConstraint("iri", name=op.f("uq_streams_iri")),
    )
    op.create_table(
        "frames",
        sa.Column("id", ID, nullable=False),
        sa.Column("stream_id", ID, nullable=False),
        sa.Column("ts", UTC, nullable=False),
        sa.Column("frame_iri", sa.Text(), nullable=False),
        sa.Column("triple_count", sa.Integer(), nullable=False),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_frames_stream_id_streams")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_frames")),
        sa.UniqueConstraint("frame_iri", name=op.f("uq_frames_frame_iri")),
        sa.UniqueConstraint("stream_id", "ts", name=op.f("uq_frames_stream_id_ts")),
    )
    op.create_table(
        "frame_triples",
        sa.Column("id", ID, nullable=False),
        sa.Column("frame_id", ID, nullable=False),
        sa.Column("s", sa.Text(), nullable=False),
        sa.Column("p", sa.Text(), nullable=False),
        sa.Column("o", sa.Text(), nullable=False),
        sa.Column("o_num", sa.Double(), nullable=True),
        sa.Column("o_time", UTC, nullable=True),
        sa.ForeignKeyConstraint(
            ["frame_id"],
            ["frames.id"],
            name=op.f("fk_frame_triples_frame_id_frames"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_frame_triples")),
    )
    op.create_index(op.f("ix_frame_triples_frame_id"), "frame_triples", ["frame_id"])
    op.create_table(
        "window_results",
        sa.Column("id", ID, nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=False),
        sa.Column("window_open", UTC, nullable=False),
        sa.Column("window_close", UTC, nullable=False),
        sa.Column("form", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("row_count", sa.Integer(), nullable=False),
        sa.Column("frame_id", ID, nullable=True),
        sa.CheckConstraint(
            "form IN ('SELECT', 'CONSTRUCT', 'ASK')", name=op.f("ck_window_results_form")
        ),
        sa.ForeignKeyConstraint(
            ["frame_id"],
            ["frames.id"],
            name=op.f("fk_window_results_frame_id_frames"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_window_results")),
        sa.UniqueConstraint(
            "query_iri", "window_close", name=op.f("uq_window_results_query_iri_window_close")
        ),
    )
    op.create_table(
        "activities",
        sa.Column("id", ID, nullable=False),
        sa.Column("iri", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=True),
        sa.Column("query_text_hash", sa.String(length=64), nullable=True),
        sa.Column("window_open", UTC, nullable=True),
        sa.Column("window_close", UTC, nullable=True),
        sa.Column("dag_id", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("task_id", sa.Text(), nullable=True),
        sa.Column("try_number", sa.Integer(), nullable=True),
        sa.Column("spark_app_id", sa.Text(), nullable=True),
        sa.Column("code_version", sa.Text(), nullable=True),
        sa.Column("started_at", UTC, nullable=False),
        sa.Column("ended_at", UTC, nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.CheckConstraint(
            "kind IN ('ingest', 'window_evaluation', 'pattern_match', 'quality_check', 'alert')",
            name=op.f("ck_activities_kind"),
        ),
        sa.CheckConstraint(
            "status IN ('running', 'success', 'failed')", name=op.f("ck_activities_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_activities")),
        sa.UniqueConstraint("iri", name=op.f("uq_activities_iri")),
    )
    op.create_index(op.f("ix_activities_dag_id_run_id"), "activities", ["dag_id", "run_id"])
    for table in ("activity_used", "activity_generated"):
        op.create_table(
            table,
            sa.Column("activity_id", ID, nullable=False),
            sa.Column("entity_iri", sa.Text(), nullable=False),
            sa.Column("entity_kind", sa.String(length=16), nullable=False),
            sa.Column("checksum", sa.String(length=64), nullable=True),
            sa.CheckConstraint(ENTITY_KINDS, name=op.f(f"ck_{table}_entity_kind")),
            sa.ForeignKeyConstraint(
                ["activity_id"],
                ["activities.id"],
                name=op.f(f"fk_{table}_activity_id_activities"),
                ondelete="CASCADE",
            ),
            sa.PrimaryKeyConstraint("activity_id", "entity_iri", name=op.f(f"pk_{table}")),
        )
        op.create_index(op.f(f"ix_{table}_entity_iri"), table, ["entity_iri"])
    op.create_table(
        "quality_results",
        sa.Column("id", ID, nullable=False),
        sa.Column("activity_id", ID, nullable=False),
        sa.Column("suite", sa.Text(), nullable=False),
        sa.Column("expectation", sa.Text(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("details", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("created_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["activity_id"],
            ["activities.id"],
            name=op.f("fk_quality_results_activity_id_activities"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quality_results")),
    )
    op.create_index(op.f("ix_quality_results_activity_id"), "quality_results", ["activity_id"])
    op.create_table(
        "quarantine",
        sa.Column("id", ID, nullable=False),
        sa.Column("stream_id", ID, nullable=False),
        sa.Column("source_file", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("triples", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("activity_id", ID, nullable=True),
        sa.Column("created_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["activity_id"],
            ["activities.id"],
            name=op.f("fk_quarantine_activity_id_activities"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_quarantine_stream_id_streams")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quarantine")),
    )
    op.create_index(
        op.f("ix_quarantine_stream_id_source_file"), "quarantine", ["stream_id", "source_file"]
    )
