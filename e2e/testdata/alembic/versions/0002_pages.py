"""a column with a default"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade():
    op.add_column("books", sa.Column("pages", sa.Integer, nullable=False, server_default="0"))


def downgrade():
    op.drop_column("books", "pages")
