"""GET /healthz: the load balancer's and the container's health check. No login; it answers
200 "ok" when the database takes a query and 503 "unavailable" when it does not, and says
nothing else (no versions, hosts or error text: the reason goes to the log)."""

from __future__ import annotations

import logging

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        logger.exception("health check: the database did not answer")
        # a broken connection is not kept for the next check (CONN_MAX_AGE)
        connection.close_if_unusable_or_obsolete()
        return HttpResponse("unavailable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")
