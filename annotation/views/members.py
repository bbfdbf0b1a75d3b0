"""The study's members page (/s/SLUG/members/): leads invite annotators, change roles and
kinds, resend invitations and remove members; leads and moderators seat, move and remove the
annotators of the groups they manage. Every change goes through annotation/accounts/seats.py
(the round rules: whoever has labelled a group's card stays in it); a refusal comes back as
the page's error message and changes nothing."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from ..access import get_study_for_manager, lead_post
from ..accounts.forms import InviteForm, MoveForm, RoleForm
from ..accounts.invitations import invite, send_invitations
from ..accounts.seats import (
    move_annotator,
    remove_member,
    seat_annotator,
    set_role,
    unseat_annotator,
)
from ..forms import form_errors
from ..models import Membership, Role, SeatRefused, Study

MODERATORS_MANAGE_ANNOTATORS = (
    "Moderators move annotators only: {name} is a {role} of the study; ask a lead."
)


def _members(study: Study, groups) -> list[dict]:
    """Every member with their seats in `groups` (the groups shown)."""
    seats: dict[int, list[tuple[str, str]]] = {}
    for group in groups:
        for user in group.annotators.all():
            seats.setdefault(user.pk, []).append((group.name, "annotator"))
        if group.moderator_id:
            seats.setdefault(group.moderator_id, []).append((group.name, "moderator"))
    memberships = study.memberships.select_related("user").order_by("user__username")
    return [{"m": m, "user": m.user, "seats": seats.get(m.user_id, [])} for m in memberships]


def _page(request, study, role, groups, invite_form=None, invite_errors=(), status=200):
    User = get_user_model()
    groups = groups.prefetch_related(
        Prefetch("annotators", queryset=User.objects.order_by("username"))
    ).select_related("moderator")
    is_lead = role == Role.LEAD
    annotators = study.memberships.select_related("user").order_by("user__username")
    ctx = {
        "study": study,
        "is_lead": is_lead,
        "groups": groups,
        "members": _members(study, groups) if is_lead else [],
        # whom a moderator may seat in their groups: the study's annotators
        "seatable": annotators if is_lead else annotators.filter(role=Role.ANNOTATOR),
        "invite_form": invite_form or InviteForm(study),
        "invite_errors": invite_errors,
        "roles": Role.choices,
        "invitation_days": settings.INVITATION_DAYS,
    }
    return render(request, "accounts/members.html", ctx, status=status)


@login_required
def members(request: HttpRequest, slug: str) -> HttpResponse:
    study, role, groups = get_study_for_manager(request.user, slug)
    return _page(request, study, role, groups)


@lead_post
def invite_people(request: HttpRequest, study: Study) -> HttpResponse:
    form = InviteForm(study, request.POST)
    # a bad field is named (the list itself is read, and its lines named, by roster.py)
    errors = [f"{name}: {e}" for name, errs in form.errors.items() for e in errs]
    if form.is_valid():
        data = form.cleaned_data
        result = invite(study, request.user, data["people"], data["kind"], data["group"])
        errors = result.errors
    if errors:
        # nothing was created: the list comes back as pasted, with every bad line named
        _, role, groups = get_study_for_manager(request.user, study.slug)
        return _page(request, study, role, groups, form, errors, status=422)
    failed = send_invitations(request, study, request.user, result.people)
    names = ", ".join(u.username for u in result.people)
    messages.success(
        request,
        f"Invited {len(result.people)} ({len(result.created)} new account"
        f"{'s' if len(result.created) != 1 else ''}): {names}.",
    )
    if failed:
        messages.error(request, failed)
    return redirect("members", study.slug)


def _member(study: Study, user_id: int):
    return get_object_or_404(
        Membership.objects.select_related("user"), study=study, user_id=user_id
    )


@lead_post
def resend(request: HttpRequest, study: Study, user_id: int) -> HttpResponse:
    user = _member(study, user_id).user
    if user.has_usable_password():
        messages.error(request, f"{user.username} has set a password already: nothing to resend.")
    elif not user.email:
        messages.error(request, f"{user.username} has no email address: nowhere to send it.")
    else:
        failed = send_invitations(request, study, request.user, [user])
        (messages.error if failed else messages.success)(
            request, failed or f"Invitation sent again to {user.username} ({user.email})."
        )
    return redirect("members", study.slug)


def _refused(request, change, *args) -> bool:
    try:
        change(*args)
    except SeatRefused as e:
        messages.error(request, f"Nothing changed: {e}.")
        return True
    return False


@lead_post
def member_role(request: HttpRequest, study: Study, user_id: int) -> HttpResponse:
    membership = _member(study, user_id)
    form = RoleForm(study, request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing changed: {form_errors(form)}")
        return redirect("members", study.slug)
    data = form.cleaned_data
    user = membership.user
    if not _refused(request, set_role, study, user, data["role"], data["group"]):
        Membership.objects.filter(pk=membership.pk).update(kind=data["kind"])
        messages.success(request, f"{user.username} is now a {data['role']} ({data['kind']}).")
    return redirect("members", study.slug)


@lead_post
def member_remove(request: HttpRequest, study: Study, user_id: int) -> HttpResponse:
    user = _member(study, user_id).user
    if not _refused(request, remove_member, study, user):
        messages.success(request, f"{user.username} is no longer a member of the study.")
    return redirect("members", study.slug)


@login_required
@require_POST
def member_seat(request: HttpRequest, slug: str) -> HttpResponse:
    """A member chosen on the page (`member`) seated in a group: member_move without source."""
    member = request.POST.get("member", "")
    if not member.isdigit():
        get_study_for_manager(request.user, slug)  # who may not manage learns nothing more
        messages.error(request, "Nothing changed: choose a member.")
        return redirect("members", slug)
    return _move(request, slug, int(member))


@login_required
@require_POST
def member_move(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    return _move(request, slug, user_id)


def _move(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Seat, move or unseat one annotator among the groups the user manages."""
    study, role, groups = get_study_for_manager(request.user, slug)
    membership = _member(study, user_id)
    user = membership.user
    if role != Role.LEAD and membership.role != Role.ANNOTATOR:
        raise PermissionDenied(
            MODERATORS_MANAGE_ANNOTATORS.format(name=user.username, role=membership.role)
        )
    form = MoveForm(groups, request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing changed: {form_errors(form)}")
        return redirect("members", study.slug)
    source, target = form.cleaned_data["source"], form.cleaned_data["target"]
    if source and target:
        change, args, done = move_annotator, (user, source, target), f"moved to {target}"
    elif source:
        change, args, done = unseat_annotator, (source, user), f"no longer in {source}"
    else:
        change, args, done = seat_annotator, (target, user), f"now an annotator of {target}"
    if not _refused(request, change, *args):
        messages.success(request, f"{user.username} is {done}.")
    return redirect("members", study.slug)
