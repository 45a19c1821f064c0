"""An evaluation's reporting policy, recorded on its activity (``non-empty`` or
``every-close``: ``rsp_jobs.algebra.schedule``), so that ``rsp audit --reevaluate`` reports the
same closes. NULL: recorded before this revision, when every evaluation was ``non-empty``.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("activities") as batch:
        batch.add_column(sa.Column("report", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("activities") as batch:
        batch.drop_column("report")
