# Django settings for tandem's end-to-end test: the database is the router
# of a hot-standby pair, named by TANDEM_DJANGO_HOST / TANDEM_DJANGO_PORT.
import os

SECRET_KEY = "tandem-e2e"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "django.contrib.postgres", "shop"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "tandem",
        "USER": "tandem",
        "PASSWORD": "secret",
        "HOST": os.environ["TANDEM_DJANGO_HOST"],
        "PORT": os.environ["TANDEM_DJANGO_PORT"],
    }
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
