"""renames: a column and a table"""
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade():
    op.alter_column("books", "title", new_column_name="name")
    op.rename_table("authors", "writers")


def downgrade():
    op.rename_table("writers", "authors")
    op.alter_column("books", "name", new_column_name="title")
