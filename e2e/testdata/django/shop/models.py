from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)


class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    title = models.CharField(max_length=250, db_index=True)
    published = models.DateTimeField(null=True)
    pages = models.IntegerField(default=0)


class Doc(models.Model):
    # django.contrib.postgres on the SQLite back end: an array, a JSON
    # document, gin indexes on both.
    title = models.CharField(max_length=100)
    tags = ArrayField(models.CharField(max_length=20), default=list)
    data = models.JSONField(default=dict)

    class Meta:
        indexes = [GinIndex(fields=["tags"], name="shop_doc_tags_gin"), GinIndex(fields=["data"], name="shop_doc_data_gin")]
