"""The invitation's link: choose a password, then straight into the study
(annotation/accounts/invitations.py makes and checks the link)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import SetPasswordForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters

from ..accounts.invitations import INVALID, InvitationRefused, check_token

REFUSED_STATUS = {INVALID: 400}  # used and expired: 410, the link is gone


@never_cache
@sensitive_post_parameters("new_password1", "new_password2")
def accept(request: HttpRequest, token: str) -> HttpResponse:
    try:
        invitation = check_token(token)
    except InvitationRefused as e:
        ctx = {"why": e.why, "message": str(e)}
        return render(request, "accounts/refused.html", ctx, status=REFUSED_STATUS.get(e.why, 410))
    user = invitation.user
    form = SetPasswordForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()  # spends this link and every other one sent to the account
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        study = invitation.study
        messages.success(request, f"Welcome, {user.username}: your password is set.")
        if study is not None and study.role_of(user):
            return redirect("study", study.slug)
        return redirect("home")
    inviter = invitation.inviter
    ctx = {
        "form": form,
        "invitation": invitation,
        "inviter": (inviter.get_full_name() or inviter.username) if inviter else "A lead",
    }
    return render(request, "accounts/accept.html", ctx, status=422 if form.errors else 200)
