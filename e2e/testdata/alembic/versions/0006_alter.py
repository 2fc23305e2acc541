"""alter_column: a column filled and made NOT NULL, widened, a default dropped"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade():
    op.add_column("books", sa.Column("isbn", sa.String(13), nullable=True))
    op.execute("UPDATE books SET isbn = '978-' || id")
    op.alter_column("books", "isbn", nullable=False, type_=sa.String(17), existing_type=sa.String(13))
    op.alter_column("books", "pages", server_default=None, existing_type=sa.Integer)


def downgrade():
    op.alter_column("books", "pages", server_default="0", existing_type=sa.Integer)
    op.drop_column("books", "isbn")
