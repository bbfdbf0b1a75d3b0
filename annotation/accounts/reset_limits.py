"""How often a password reset may be asked for: the reset page sends mail to whoever an
address names, so unlimited it is a way to flood a member's inbox, or to hammer the mail
server from one address.

- Per address asking (addresses.client_address, the one the login limits count):
  PASSWORD_RESET_PER_ADDRESS requests an hour; past it the page answers 429 with
  Retry-After and sends nothing.
- Per email address: at most PASSWORD_RESET_PER_EMAIL mails an hour; past it the page says
  what it always says ("check your email") and sends nothing, so it tells nobody whether the
  address has an account.

The counts live in the cache (shared by every process with CACHE_URL, config/settings.py),
each in a window of an hour from its first request."""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.contrib.auth.views import PasswordResetView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from .addresses import client_address
from .forms import ResetForm

WINDOW = 3600  # seconds


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.strip().lower().encode()).hexdigest()[:32]
    return f"password-reset:{kind}:{digest}"


def _count(kind: str, value: str) -> tuple[int, int]:
    """One more request of `kind` for `value` in its window: (count, seconds left)."""
    key = _key(kind, value)
    now = int(time.time())
    # the window's start is kept beside the count, so Retry-After can say when it ends
    cache.add(key + ":since", now, WINDOW)
    cache.add(key, 0, WINDOW)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW)
        count = 1
    since = cache.get(key + ":since") or now
    return count, max(1, since + WINDOW - now)


def address_refused(request: HttpRequest) -> HttpResponse | None:
    """None, or the 429 page for an address past its hourly limit."""
    count, left = _count("address", client_address(request))
    if count <= settings.PASSWORD_RESET_PER_ADDRESS:
        return None
    context = {"minutes": max(1, round(left / 60)), "limit": settings.PASSWORD_RESET_PER_ADDRESS}
    response = render(request, "registration/password_reset_limited.html", context, status=429)
    response["Retry-After"] = str(left)
    return response


def email_allowed(email: str) -> bool:
    """Whether one more reset mail may go to `email` this hour."""
    count, _left = _count("email", email)
    return count <= settings.PASSWORD_RESET_PER_EMAIL


class ResetView(PasswordResetView):
    """Django's password reset (the app's ResetForm), within the limits above."""

    form_class = ResetForm

    def post(self, request, *args, **kwargs):
        return address_refused(request) or super().post(request, *args, **kwargs)

    def form_valid(self, form):
        if not email_allowed(form.cleaned_data["email"]):
            # the page any address gets ("check your email"), without another mail
            return HttpResponseRedirect(self.get_success_url())
        return super().form_valid(form)
