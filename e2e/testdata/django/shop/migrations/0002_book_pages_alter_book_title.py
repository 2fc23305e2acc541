from django.db import migrations, models


def fill_pages(apps, schema_editor):
    Book = apps.get_model("shop", "Book")
    for b in Book.objects.all():
        b.pages = 100 + b.id
        b.save()


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [
        # AddField sends ADD COLUMN ... DEFAULT 0 NOT NULL, then DROP DEFAULT
        migrations.AddField(model_name="book", name="pages", field=models.IntegerField(default=0)),
        # AlterField of max_length: ALTER COLUMN TYPE varchar(250)
        migrations.AlterField(model_name="book", name="title", field=models.CharField(db_index=True, max_length=250)),
        migrations.RunPython(fill_pages, migrations.RunPython.noop),
    ]
