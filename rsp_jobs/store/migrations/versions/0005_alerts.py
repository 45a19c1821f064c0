"""Alerts: what the alert DAGs raised, one row per alert (its frame and provenance are in the
frame store), so that ``rsp alerts --since`` lists them and a re-run notifies only new ones.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "alerts",
        sa.Column("id", ID, nullable=False),
        sa.Column("alert_iri", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("event_time", UTC, nullable=False),
        sa.Column("reported_at", UTC, nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("frame_id", ID, nullable=True),
        sa.Column("activity_iri", sa.Text(), nullable=True),
        sa.Column("notified_at", UTC, nullable=True),
        sa.ForeignKeyConstraint(
            ["frame_id"], ["frames.id"], name=op.f("fk_alerts_frame_id_frames"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
        sa.UniqueConstraint("alert_iri", name=op.f("uq_alerts_alert_iri")),
    )
    op.create_index(op.f("ix_alerts_event_time"), "alerts", ["event_time"])


def downgrade() -> None:
    op.drop_index(op.f("ix_alerts_event_time"), table_name="alerts")
    op.drop_table("alerts")
