"""A derived event's interval start on its frame triple (EP-SPARQL §3.2: closQ(S) holds
⟨tr, tα, tω⟩ for a rule's match over [tα, tω]). A frame is stamped with tω; a REGISTER STREAM
pattern's triple keeps its match's tα here, so an export, an import and a chained query read
the interval back. NULL: the event is the instant [ts, ts], as every triple stored before.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("frame_triples") as batch:
        batch.add_column(sa.Column("start", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("frame_triples") as batch:
        batch.drop_column("start")
