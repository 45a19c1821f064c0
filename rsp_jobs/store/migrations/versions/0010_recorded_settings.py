"""What an evaluation ran with, recorded: the origin of its window grid (``t0``), its entailment
regime and its background files as given (``IRI=PATH``), on the activity; each background file
is also an entity it used (kind ``background``, with its SHA-256), so that ``rsp audit
--reevaluate`` re-evaluates with them and tells a changed background from a changed result.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = "entity_kind IN ('frame', 'lake_file', 'query', 'result')"
AFTER = "entity_kind IN ('frame', 'lake_file', 'query', 'result', 'background')"


def upgrade() -> None:
    with op.batch_alter_table("activities") as batch:
        batch.add_column(sa.Column("t0", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("entailment", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("background", sa.JSON(), nullable=True))
    _entity_kinds(AFTER)


def downgrade() -> None:
    _entity_kinds(BEFORE)
    with op.batch_alter_table("activities") as batch:
        batch.drop_column("background")
        batch.drop_column("entailment")
        batch.drop_column("t0")


def _entity_kinds(check: str) -> None:
    """SQLite changes a CHECK constraint by rebuilding the table (batch mode); PostgreSQL alters it."""
    for table in ("activity_used", "activity_generated"):
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(op.f(f"ck_{table}_entity_kind"), type_="check")
            batch.create_check_constraint(op.f(f"ck_{table}_entity_kind"), check)
