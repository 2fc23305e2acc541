"""an index"""
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade():
    op.create_index("ix_books_title", "books", ["title"])


def downgrade():
    op.drop_index("ix_books_title", table_name="books")
