"""Time-invariant statements (TA-RDF §4: r[Nil]; restriction 1: a property of a stream holds for
all its frames), stored once, not copied into frames.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "invariant_triples",
        sa.Column("id", ID, nullable=False),
        sa.Column("s", sa.Text(), nullable=False),
        sa.Column("p", sa.Text(), nullable=False),
        sa.Column("o", sa.Text(), nullable=False),
        sa.Column("o_num", sa.Double(), nullable=True),
        sa.Column("o_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invariant_triples")),
        sa.UniqueConstraint("checksum", name=op.f("uq_invariant_triples_checksum")),
    )
    op.create_index(op.f("ix_invariant_triples_p"), "invariant_triples", ["p"])


def downgrade() -> None:
    op.drop_index(op.f("ix_invariant_triples_p"), table_name="invariant_triples")
    op.drop_table("invariant_triples")
