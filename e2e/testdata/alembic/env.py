# Alembic environment for e2e/alembic_test.go: online migrations only, in
# Alembic's default mode for PostgreSQL (transactional DDL: one transaction
# per run of upgrade or downgrade).
import os

from alembic import context
from sqlalchemy import create_engine

url = os.environ["TANDEM_ALEMBIC_URL"]
engine = create_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
