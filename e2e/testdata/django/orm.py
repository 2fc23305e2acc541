# The ORM through tandem: create, query, update, delete, a transaction.
import django

django.setup()
from django.db import transaction  # noqa: E402
from shop.models import Author, Book  # noqa: E402

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
print("orm ok", Book.objects.count())
