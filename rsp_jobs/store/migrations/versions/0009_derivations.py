"""Exact per-window lineage: each result frame an evaluation generated, with the frames in its
window's scope (or its matches' events), so that ``prov:wasDerivedFrom`` names those and not
every frame the run read.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "activity_derivations",
        sa.Column("activity_id", ID, nullable=False),
        sa.Column("entity_iri", sa.Text(), nullable=False),
        sa.Column("source_iri", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["activity_id"],
            ["activities.id"],
            name=op.f("fk_activity_derivations_activity_id_activities"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "activity_id", "entity_iri", "source_iri", name=op.f("pk_activity_derivations")
        ),
    )
    op.create_index(
        op.f("ix_activity_derivations_entity_iri"), "activity_derivations", ["entity_iri"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_activity_derivations_entity_iri"), table_name="activity_derivations")
    op.drop_table("activity_derivations")
