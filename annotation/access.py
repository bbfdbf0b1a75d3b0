"""Access helpers shared by pages, partials and the API. Every view starts with one of
these; a template never decides who may see what."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import Group, Role, Study, Turn


def get_study_for_user(user, slug: str) -> tuple[Study, str]:
    """The study and the user's role in it; 404 for non-members, so a study's existence
    does not leak."""
    study = get_object_or_404(Study.objects.select_related("taxonomy_version"), slug=slug)
    role = study.role_of(user)
    if role is None:
        raise Http404("No such study")
    return study, role


def get_study_for_lead(user, slug: str) -> Study:
    study, role = get_study_for_user(user, slug)
    if role != Role.LEAD:
        raise Http404("No such study")
    return study


def get_card_for_annotator(user, study: Study, turn_id: int) -> tuple[Turn, Group]:
    """A turn the user annotates: its conversation is assigned to one of the user's groups
    (one at most of the groups sharing it: Group.check_seat)."""
    turn = get_object_or_404(
        Turn.objects.select_related("conversation"),
        pk=turn_id,
        conversation__study=study,
    )
    group = (
        Group.objects.filter(assignments__conversation_id=turn.conversation_id, annotators=user)
        .order_by("name")
        .first()
    )
    if group is None:
        raise Http404("No such card")
    return turn, group
