"""Login limits (django-axes): the address a login attempt is counted against
(settings.AXES_CLIENT_IP_CALLABLE), and the answer to a refused login
(settings.AXES_LOCKOUT_CALLABLE): the login page saying why and when to come back, with
status 429 and Retry-After."""

from __future__ import annotations

from axes.helpers import get_cool_off
from django.conf import settings
from django.shortcuts import render


def lockout_response(request, original_response=None, credentials=None):
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60))
    context = {"minutes": minutes, "failure_limit": settings.AXES_FAILURE_LIMIT}
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


def client_address(request) -> str:
    """REMOTE_ADDR; behind LOGIN_PROXY_COUNT proxies that each append the address they saw to
    X-Forwarded-For, the entry the outermost one appended (what a client writes into the
    header itself stays to the left of it and is never taken)."""
    count = settings.LOGIN_PROXY_COUNT
    remote = request.META.get("REMOTE_ADDR", "")
    if not count:
        return remote
    seen = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    seen = [a for a in seen if a]
    return seen[-count] if len(seen) >= count else remote
