"""Partial matches of unbounded EP-SPARQL patterns, kept between micro-batches (EP-SPARQL §4),
and how far each pattern's are complete.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "partial_matches",
        sa.Column("id", ID, nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=False),
        sa.Column("node_key", sa.String(length=40), nullable=False),
        sa.Column("ta", sa.BigInteger(), nullable=False),
        sa.Column("tw", sa.BigInteger(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("vals", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partial_matches")),
    )
    op.create_index(op.f("ix_partial_matches_query_iri_tw"), "partial_matches", ["query_iri", "tw"])
    op.create_table(
        "partial_match_cuts",
        sa.Column("query_iri", sa.Text(), nullable=False),
        sa.Column("plan_key", sa.String(length=40), nullable=False),
        sa.Column("cut_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("query_iri", name=op.f("pk_partial_match_cuts")),
    )


def downgrade() -> None:
    op.drop_table("partial_match_cuts")
    op.drop_index(op.f("ix_partial_matches_query_iri_tw"), table_name="partial_matches")
    op.drop_table("partial_matches")
