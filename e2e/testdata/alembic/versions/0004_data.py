"""a data migration"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"

authors = sa.table("authors", sa.column("id", sa.Integer), sa.column("name", sa.String))
books = sa.table("books", sa.column("id", sa.Integer), sa.column("author_id", sa.Integer),
                 sa.column("title", sa.String), sa.column("pages", sa.Integer))


def upgrade():
    op.bulk_insert(authors, [{"id": 1, "name": "Ursula"}, {"id": 2, "name": "Stanisław"}])
    op.bulk_insert(books, [
        {"id": 1, "author_id": 1, "title": "The Dispossessed"},
        {"id": 2, "author_id": 1, "title": "The Lathe of Heaven"},
        {"id": 3, "author_id": 2, "title": "Solaris"},
    ])
    op.execute("UPDATE books SET pages = 100 * id + length(title)")


def downgrade():
    op.execute("DELETE FROM books")
    op.execute("DELETE FROM authors")
