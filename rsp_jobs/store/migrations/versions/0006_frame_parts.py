"""Frame parts: where each piece of a frame came from. Several named graphs, files or
timestamped triples of one stream at one time are one frame (C-SPARQL §3.1, TA-RDF restriction
2); each part keeps its source, graph IRI, line and checksum. Frames stored before this revision
get one part each, of unknown source. And window results of DESCRIBE queries.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "frame_parts",
        sa.Column("id", ID, nullable=False),
        sa.Column("frame_id", ID, nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("graph_iri", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("statements", sa.Integer(), nullable=False),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["frame_id"],
            ["frames.id"],
            name=op.f("fk_frame_parts_frame_id_frames"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_frame_parts")),
        sa.UniqueConstraint(
            "frame_id", "source", "graph_iri", name=op.f("uq_frame_parts_frame_id_source_graph_iri")
        ),
    )
    op.execute(
        "INSERT INTO frame_parts (frame_id, source, graph_iri, line, statements, checksum) "
        "SELECT id, '', frame_iri, NULL, triple_count, checksum FROM frames"
    )
    with op.batch_alter_table("window_results") as batch:
        batch.drop_constraint(op.f("ck_window_results_form"), type_="check")
        batch.create_check_constraint(
            op.f("ck_window_results_form"), "form IN ('SELECT', 'CONSTRUCT', 'ASK', 'DESCRIBE')"
        )


def downgrade() -> None:
    with op.batch_alter_table("window_results") as batch:
        batch.drop_constraint(op.f("ck_window_results_form"), type_="check")
        batch.create_check_constraint(
            op.f("ck_window_results_form"), "form IN ('SELECT', 'CONSTRUCT', 'ASK')"
        )
    op.drop_table("frame_parts")
