from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)


class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    title = models.CharField(max_length=250, db_index=True)
    published = models.DateTimeField(null=True)
    pages = models.IntegerField(default=0)
