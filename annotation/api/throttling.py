"""Requests without valid credentials (no token, a wrong one, no session), counted per client
address: past the anonymous rate (settings.REST_FRAMEWORK's "anon", API_THROTTLE_ANON, 60 a
minute) every API request from that address is a 429 with Retry-After until the minute is
over, whatever credentials it carries, so that a right guess cannot be told from a wrong one.

DRF's own throttles run after authentication and permissions, so they never saw these
requests (always a 401): here the check is the first step of authentication
(`TokenAuthentication`, settings.REST_FRAMEWORK's first authentication class) and the count
is the API's exception handler's (annotation/api/common.py), on every 401. The address is the
login limits' (annotation/accounts/addresses.py: LOGIN_PROXY_COUNT, proxy-aware); the count
is in the cache, shared by every worker with CACHE_URL, in fixed windows counted with an
atomic increment."""

from __future__ import annotations

import math

from rest_framework import authentication
from rest_framework.exceptions import Throttled
from rest_framework.throttling import SimpleRateThrottle

from ..accounts.addresses import client_address


class FailedAuthentications(SimpleRateThrottle):
    """The count of an address's requests that failed authentication in the current window
    (the rate's period), not a DRF throttle class: nothing lists it in the settings."""

    scope = "anon"
    cache_format = "throttle_failed_auth_%(window)d_%(ident)s"

    def _key_and_wait(self, request) -> tuple[str, int]:
        now = self.timer()
        window = int(now // self.duration)
        key = self.cache_format % {"window": window, "ident": client_address(request)}
        return key, max(1, math.ceil((window + 1) * self.duration - now))

    def wait(self, request) -> int | None:
        """Seconds until the address may try again, or None if it may now."""
        if self.rate is None:
            return None
        key, wait = self._key_and_wait(request)
        return wait if self.cache.get(key, 0) >= self.num_requests else None

    def count(self, request) -> None:
        if self.rate is None:
            return
        key, wait = self._key_and_wait(request)
        self.cache.add(key, 0, timeout=wait + 1)
        try:
            self.cache.incr(key)
        except ValueError:  # the window ended between add and incr
            self.cache.set(key, 1, timeout=self.duration)


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's token authentication, after refusing an address past its failed-authentication
    limit: a 429 even with a right token or a logged-in session."""

    def authenticate(self, request):
        wait = FailedAuthentications().wait(request)
        if wait is not None:
            raise Throttled(
                wait,
                detail="Too many requests without valid credentials from this address.",
            )
        return super().authenticate(request)
