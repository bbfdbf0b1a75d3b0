"""A study, its conversations and their turns, and its groups. The same rules as the pages:
a member sees the study; the conversations and their turns are the leads' (the lead's
conversations and browse pages; anyone else a 404, as the API's other leads-only
endpoints); the groups are the leads' (every group) and the moderators' (the groups they
moderate, as their queue), a 403 for other members (access.get_moderated_groups). A
running import's conversations are in none of them (ConversationQuerySet.visible, as on
the pages)."""

from __future__ import annotations

from django.db.models import F, Prefetch
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from ..access import get_moderated_groups, get_study_for_lead, get_study_for_user
from ..models import Conversation, Group, Turn, study_conversation_counts
from .common import PageQuerySerializer, page_of, paginate, read_query, responses
from .outputs import (
    ConversationOutputSerializer,
    ConversationsQuerySerializer,
    GroupOutputSerializer,
    TurnOutputSerializer,
)
from .serializers import StudyOutputSerializer


@extend_schema(
    operation_id="studies_retrieve", responses=responses({200: StudyOutputSerializer}, 404)
)
@api_view(["GET"])
def study(request: Request, slug: str) -> Response:
    """A study I am a member of, with my role in it."""
    found, role = get_study_for_user(request.user, slug)
    found.role = role
    return Response(StudyOutputSerializer(found).data)


@extend_schema(
    operation_id="studies_conversations_list",
    parameters=[ConversationsQuerySerializer],
    responses=responses({200: page_of(ConversationOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def conversations(request: Request, slug: str) -> Response:
    """Leads only: the study's conversations (without their turns), in import order."""
    study = get_study_for_lead(request.user, slug)
    query = read_query(request, ConversationsQuerySerializer)
    # as the pages: a running import's conversations stay out until its job is done
    rows = (
        study.conversations.visible()
        .prefetch_related(Prefetch("groups", queryset=Group.objects.only("id", "name")))
        # the study too: a prefetch reads it (a query a row when deferred)
        .only(
            "id",
            "study_id",
            "external_id",
            "key",
            "n_turns",
            "source_format",
            "set_aside",
            "created_at",
        )
    )
    if "group" in query:
        rows = rows.filter(groups__name=query["group"])
    if "external_id" in query:
        rows = rows.filter(external_id=query["external_id"])
    if "key" in query:
        rows = rows.filter(key=query["key"])
    filtered = any(name in query for name in ("group", "external_id", "key"))
    # every visible conversation: their number is the kept figures', not a count
    count = None if filtered else study_conversation_counts(study)["conversations"]
    return paginate(request, rows.order_by("id"), ConversationOutputSerializer, count=count)


@extend_schema(
    operation_id="studies_conversations_turns_list",
    parameters=[PageQuerySerializer],
    responses=responses({200: page_of(TurnOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def turns(request: Request, slug: str, conversation_id: int) -> Response:
    """Leads only: a conversation's turns with their texts, in order (as the browse page)."""
    study = get_study_for_lead(request.user, slug)
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    rows = Turn.objects.filter(conversation=conversation).order_by("index")
    return paginate(request, rows, TurnOutputSerializer)


@extend_schema(
    operation_id="studies_groups_list",
    responses=responses({200: GroupOutputSerializer(many=True)}, 403, 404),
)
@api_view(["GET"])
def groups(request: Request, slug: str) -> Response:
    """Leads: every group of the study; a moderator: the groups they moderate (403 for
    other members). With their annotators, moderator and number of conversations."""
    study, role = get_study_for_user(request.user, slug)
    ids = [g.pk for g in get_moderated_groups(request.user, study, role)]
    rows = (
        Group.objects.filter(pk__in=ids)
        .select_related("moderator", "study")
        .prefetch_related("annotators")
        .annotate(n_conversations=Coalesce(F("figures__conversations"), 0))  # kept figures
        .order_by("name")
    )
    return Response(GroupOutputSerializer(rows, many=True).data)
