# The ORM through tandem: create, query, update, delete, a transaction.
import django

django.setup()
from django.db import transaction  # noqa: E402
from shop.models import Author, Book, Doc  # noqa: E402

with transaction.atomic():
    ursula = Author.objects.create(name="Ursula")
    Book.objects.create(author=ursula, title="The Dispossessed", pages=387)
    Book.objects.create(author=ursula, title="The Lathe of Heaven", pages=184)
stan = Author.objects.create(name="Stanisław")
Book.objects.create(author=stan, title="Solaris", pages=204)
Book.objects.filter(title="Solaris").update(pages=205)
assert Book.objects.filter(author__name="Ursula").count() == 2
assert sorted(b.title for b in Book.objects.filter(pages__gt=200)) == ["Solaris", "The Dispossessed"]
try:
    with transaction.atomic():
        Book.objects.create(author=stan, title="rolled back", pages=1)
        raise RuntimeError("roll back")
except RuntimeError:
    pass
assert not Book.objects.filter(title="rolled back").exists()
# iterator(): a server-side cursor (DECLARE ... WITH HOLD in autocommit,
# FETCH in chunks), and inside a transaction (without HOLD).
titles = [b.title for b in Book.objects.order_by("title").iterator(chunk_size=2)]
assert titles == ["Solaris", "The Dispossessed", "The Lathe of Heaven"], titles
with transaction.atomic():
    assert [b.pages for b in Book.objects.order_by("pages").iterator(chunk_size=1)] == [184, 205, 387]
# django.contrib.postgres: array and JSON lookups over gin-indexed columns.
Doc.objects.create(title="a", tags=["x", "y"], data={"k": 1, "s": "v", "b": True})
Doc.objects.create(title="b", tags=["y"], data={"k": 2, "n": {"m": [1, 2]}})
got = [Doc.objects.filter(tags__contains=["x"]).count(), Doc.objects.filter(tags__overlap=["y"]).count(), Doc.objects.filter(tags__len=1).count(),
       Doc.objects.filter(data__k=1).count(), Doc.objects.filter(data__s="v").count(), Doc.objects.filter(data__b=True).count(),
       Doc.objects.filter(data__has_key="n").count(), Doc.objects.filter(data__contains={"k": 2}).count(), Doc.objects.filter(data__n__m__1=2).count()]
assert got == [1, 2, 1, 1, 1, 1, 1, 1, 1], got
assert list(Doc.objects.order_by("-data__k").values_list("title", flat=True)) == ["b", "a"]
print("orm ok", Book.objects.count())
