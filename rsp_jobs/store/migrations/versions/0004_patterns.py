"""Patterns: the facts DOTR rules consumed, so that consumption holds across micro-batches.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "consumed_facts",
        sa.Column("id", ID, nullable=False),
        sa.Column("query_iri", sa.Text(), nullable=False),
        sa.Column("fact_key", sa.Text(), nullable=False),
        sa.Column("fact_time", UTC, nullable=False),
        sa.Column("match_time", UTC, nullable=False),
        sa.Column("activity_iri", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consumed_facts")),
        sa.UniqueConstraint(
            "query_iri", "fact_key", name=op.f("uq_consumed_facts_query_iri_fact_key")
        ),
    )
    op.create_index(
        op.f("ix_consumed_facts_query_iri_match_time"),
        "consumed_facts",
        ["query_iri", "match_time"],
    )
