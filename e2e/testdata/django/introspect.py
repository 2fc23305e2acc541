# Django's schema introspection through tandem (what migrate and inspectdb
# read): each table's columns, constraints and sequences, printed without
# the names a back end chooses itself (constraint names), one line each.
import django

django.setup()
from django.db import connection  # noqa: E402

with connection.cursor() as cursor:
    intro = connection.introspection
    for table in ["shop_author", "shop_book", "shop_doc"]:
        cols = intro.get_table_description(cursor, table)
        print(table, "columns", [(c.name, c.type_code, c.null_ok, c.default is not None) for c in cols])
        cons = intro.get_constraints(cursor, table)
        print(table, "constraints", sorted(
            repr((tuple(c["columns"]), c["primary_key"], c["unique"], c["foreign_key"], c["check"], c["index"], tuple(c.get("orders") or ())))
            for c in cons.values() if not c["check"]))
        print(table, "sequences", intro.get_sequences(cursor, table))
        print(table, "primary key", intro.get_primary_key_column(cursor, table))
        print(table, "relations", intro.get_relations(cursor, table))
    print("tables", sorted(t.name for t in intro.get_table_list(cursor) if t.name.startswith("shop_")))
