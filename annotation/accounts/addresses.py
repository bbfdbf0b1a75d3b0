"""The address a request is counted against: the login limits (settings.
AXES_CLIENT_IP_CALLABLE), the password reset limits (reset_limits.py) and the API's
throttles (api/throttling.py) all count the same client, proxy-aware (LOGIN_PROXY_COUNT)."""

from __future__ import annotations

from django.conf import settings


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
