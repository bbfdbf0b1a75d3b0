from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# what each server process would otherwise load on its first cards (annotation/rendering.py)
from annotation.rendering import warm  # noqa: E402  (the apps are set up above)

warm()
