"""Orchestration: per-stream late-data policy, revisions of evaluations, landing files already
loaded, and late arrivals with what was done with them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("streams") as batch:
        batch.add_column(
            sa.Column(
                "late_policy",
                sa.String(length=16),
                server_default=sa.text("'drop'"),
                nullable=False,
            )
        )
        batch.create_check_constraint(
            op.f("ck_streams_late_policy"), "late_policy IN ('drop', 'reevaluate')"
        )
    op.add_column("activities", sa.Column("revision_of", sa.Text(), nullable=True))
    op.create_table(
        "ingested_files",
        sa.Column("id", ID, nullable=False),
        sa.Column("stream_id", ID, nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column("frames", sa.Integer(), nullable=False),
        sa.Column("triples", sa.Integer(), nullable=False),
        sa.Column("activity_iri", sa.Text(), nullable=True),
        sa.Column("loaded_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_ingested_files_stream_id_streams")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ingested_files")),
        sa.UniqueConstraint(
            "stream_id", "checksum", name=op.f("uq_ingested_files_stream_id_checksum")
        ),
    )
    op.create_table(
        "late_arrivals",
        sa.Column("id", ID, nullable=False),
        sa.Column("stream_id", ID, nullable=False),
        sa.Column("frame_ts", UTC, nullable=False),
        sa.Column("frame_iri", sa.Text(), nullable=False),
        sa.Column("triples", sa.Integer(), nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=False),
        sa.Column("first_close", UTC, nullable=False),
        sa.Column("last_close", UTC, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source_file", sa.Text(), nullable=False),
        sa.Column("revision_activity", sa.Text(), nullable=True),
        sa.Column("arrived_at", UTC, nullable=False),
        sa.CheckConstraint(
            "status IN ('dropped', 'pending', 'revised')", name=op.f("ck_late_arrivals_status")
        ),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_late_arrivals_stream_id_streams")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_late_arrivals")),
    )
    op.create_index(
        op.f("ix_late_arrivals_query_iri_status"), "late_arrivals", ["query_iri", "status"]
    )
