"""Login limits (django-axes): the answer to a refused login (settings.AXES_LOCKOUT_CALLABLE),
the login page saying why and when to come back, with status 429 and Retry-After. The address
an attempt is counted against is annotation/accounts/addresses.py's
(settings.AXES_CLIENT_IP_CALLABLE), which the password reset and the API's throttles count too."""

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
