"""Disputes, a card's discussion, consensus and category proposals, under the discussion
pages' rules (annotation/access.py, annotation/views/discussion.py):

- disputes: the disputed and escalated cards of the groups I moderate (a lead: every group)
  and of the groups I annotate in, but never a card I label that is still in round 1 in my
  group (`access.round1_hidden_from`), whatever else I moderate;
- a card's discussion: exactly who may open its page (`access.get_card_for_discussion`: a 403
  "still in round 1" for whoever labels it before round 1 is over in their group, a 404 for
  anyone outside its group who neither moderates it nor leads), with every list of labels
  through `access.round1_hidden_q`; the consensus is decided as on the page
  (`access.may_decide`, then `CardState.decide`);
- consensus: the leads' (the gold page), without the cards they still label in round 1;
- proposals: the experts' queue (`access.get_study_for_expert`: 403 for other members); any
  annotator of a card proposes a type on it (the card page's form, `Proposal.propose`)."""

from __future__ import annotations

from django.db.models import OuterRef, Prefetch, Q
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ..access import (
    card_comments,
    get_card_for_annotator,
    get_card_for_discussion,
    get_study_for_expert,
    get_study_for_lead,
    get_study_for_user,
    group_annotations,
    round1_hidden_card,
    round1_hidden_q,
)
from ..forms import ProposalForm
from ..models import (
    AlreadyDecided,
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Group,
    NotDecidable,
    Role,
)
from .common import (
    conversation_named,
    page_of,
    paginate,
    read_query,
    responses,
)
from .outputs import (
    ConsensusInputSerializer,
    ConsensusOutputSerializer,
    ConsensusQuerySerializer,
    DiscussionOutputSerializer,
    DiscussionQuerySerializer,
    DisputeOutputSerializer,
    DisputesQuerySerializer,
    ProposalInputSerializer,
    ProposalOutputSerializer,
    ProposalsQuerySerializer,
)
from .parsers import JSONBodyParser


@extend_schema(
    operation_id="studies_disputes_list",
    parameters=[DisputesQuerySerializer],
    responses=responses({200: page_of(DisputeOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def disputes(request: Request, slug: str) -> Response:
    """The disputed and escalated cards I may discuss: of the groups I moderate (a lead:
    all) and of my own groups, with each group's current labels of the round under way."""
    study, role = get_study_for_user(request.user, slug)
    query = read_query(request, DisputesQuerySerializer)
    mine = Q(annotators=request.user) | Q(moderator=request.user)
    groups = Group.objects.filter(study=study)
    if role != Role.LEAD:
        groups = groups.filter(mine)
    if "group" in query:
        groups = groups.filter(name=query["group"])
    statuses = [
        query.get("status") or CardStatus.DISPUTED,
        query.get("status") or CardStatus.ESCALATED,
    ]
    current = (
        Annotation.objects.current()
        .exclude(round1_hidden_q(request.user, study))  # a page's cards
        .select_related("annotator", "evidence_turn")
        .prefetch_related("types")
        .order_by("annotator__username")
    )
    states = CardState.objects.filter(group__in=groups.values("pk"), status__in=statuses)
    # a card disputed or escalated in a group I annotate has left round 1 for me: only the
    # other groups' states (those I moderate or lead) can be of a card still blind for me,
    # asked of each such row rather than against every card hidden from me (issue 25)
    annotated = list(study.groups.filter(annotators=request.user).values_list("pk", flat=True))
    if annotated:
        blind = Q(round1_hidden_card(request.user, study, OuterRef("turn_id")))
        states = states.exclude(~Q(group_id__in=annotated) & blind)
    rows = (
        CardState.objects.select_related("turn__conversation", "group")
        .defer("turn__reply_text", "turn__reply_parts", "turn__metadata", "turn__user_text")
        .prefetch_related(
            Prefetch("turn__annotations", queryset=current, to_attr="current"),
            "group__annotators",
        )
    )
    states = states.order_by("-status", "updated_at", "pk")
    return paginate(
        request, states, DisputeOutputSerializer, load=lambda ids: rows.filter(pk__in=ids)
    )


@extend_schema(
    operation_id="studies_cards_discussion_retrieve",
    parameters=[DiscussionQuerySerializer],
    responses=responses({200: DiscussionOutputSerializer}, 400, 403, 404),
)
@api_view(["GET"])
def discussion(request: Request, slug: str, turn_id: int) -> Response:
    """A card's discussion in one group: every round's labels, the thread, the consensus."""
    study, role = get_study_for_user(request.user, slug)
    group_id = read_query(request, DiscussionQuerySerializer).get("group")
    card = get_card_for_discussion(request.user, study, role, turn_id, group_id)
    card.annotations = list(
        group_annotations(card)
        # one card: the rule asked of its rows, not the study's every hidden card (issue 25)
        .exclude(round1_hidden_q(request.user, study))
        .select_related("annotator", "evidence_turn")
        .prefetch_related("types")
        .order_by("round", "id")
    )
    card.comments = list(card_comments(card))
    card.consensus = (
        Consensus.objects.current()
        .filter(turn=card.turn, group=card.group)
        .select_related("turn__conversation", "group", "decided_by")
        .prefetch_related("types")
        .first()
    )
    return Response(DiscussionOutputSerializer(card).data)


@extend_schema(
    operation_id="studies_cards_consensus_create",
    parameters=[DiscussionQuerySerializer],
    request=ConsensusInputSerializer,
    responses=responses({201: ConsensusOutputSerializer}, 400, 403, 404, 409),
)
@api_view(["POST"])
@parser_classes([JSONBodyParser])
def decide(request: Request, slug: str, turn_id: int) -> Response:
    """The group's moderator or a lead who does not annotate the card: its consensus, as on
    the discussion page (409 if it is not disputed or escalated, or already decided)."""
    study, role = get_study_for_user(request.user, slug)
    group_id = read_query(request, DiscussionQuerySerializer).get("group")
    card = get_card_for_discussion(request.user, study, role, turn_id, group_id)
    if not card.may_decide:
        raise PermissionDenied("Only the group's moderator or a lead who does not annotate it.")
    context = {"taxonomy_version": study.taxonomy_version}
    serializer = ConsensusInputSerializer(data=request.data, context=context)
    serializer.is_valid(raise_exception=True)
    d = serializer.validated_data
    try:
        decided = CardState.decide(card.turn, card.group, request.user, d["labels"], d["rationale"])
    except (AlreadyDecided, NotDecidable) as e:
        return Response({"detail": str(e)}, status=status.HTTP_409_CONFLICT)
    return Response(ConsensusOutputSerializer(decided).data, status=status.HTTP_201_CREATED)


@extend_schema(
    operation_id="studies_consensus_list",
    parameters=[ConsensusQuerySerializer],
    responses=responses({200: page_of(ConsensusOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def consensus(request: Request, slug: str) -> Response:
    """Leads only: the current consensus of every decided card and group, but for a lead who
    annotates: not on the cards still in round 1 in their group."""
    study = get_study_for_lead(request.user, slug)
    query = read_query(request, ConsensusQuerySerializer)
    rows = Consensus.objects.current().filter(group__study=study)
    if "group" in query:
        rows = rows.filter(group__name=query["group"])
    if "conversation" in query:
        rows = rows.filter(turn__conversation_id=conversation_named(study, query["conversation"]))
    rows = (
        rows.exclude(round1_hidden_card(request.user, study, OuterRef("turn_id")))
        .select_related("turn__conversation", "group", "decided_by")
        .defer("turn__reply_text", "turn__reply_parts", "turn__metadata", "turn__user_text")
        .prefetch_related("types")
        .order_by("turn__conversation_id", "turn__index", "group__name")
    )
    return paginate(request, rows, ConsensusOutputSerializer)


@extend_schema(
    operation_id="studies_proposals_list",
    parameters=[ProposalsQuerySerializer],
    responses=responses({200: page_of(ProposalOutputSerializer)}, 400, 403, 404),
)
@api_view(["GET"])
def proposals(request: Request, slug: str) -> Response:
    """Leads and experts: the study's category proposals, oldest first."""
    study = get_study_for_expert(request.user, slug)
    query = read_query(request, ProposalsQuerySerializer)
    rows = study.proposals.select_related(
        "proposer", "decided_by", "axis", "turn__conversation"
    ).defer("turn__reply_text", "turn__reply_parts", "turn__metadata", "turn__user_text")
    if "status" in query:
        rows = rows.filter(status=query["status"])
    return paginate(request, rows.order_by("created_at", "id"), ProposalOutputSerializer)


@extend_schema(
    operation_id="studies_cards_proposals_create",
    request=ProposalInputSerializer,
    responses=responses({201: ProposalOutputSerializer}, 400, 404),
)
@api_view(["POST"])
@parser_classes([JSONBodyParser])
def propose(request: Request, slug: str, turn_id: int) -> Response:
    """An annotator of the card: propose a new type (name, definition, reason; the axis by
    its code, by default the first), for the study's experts to decide."""
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    shape = ProposalInputSerializer(data=request.data)
    shape.is_valid(raise_exception=True)
    types = study.taxonomy_version.type_list()
    axes = list({t.axis_id: t.axis for t in types}.values())  # as the card page's form
    form = ProposalForm(shape.validated_data, axes=axes)
    if not form.is_valid():
        raise ValidationError({k: [str(m) for m in v] for k, v in form.errors.items()})
    proposal = form.propose(study=study, turn=turn, proposer=request.user)
    return Response(ProposalOutputSerializer(proposal).data, status=status.HTTP_201_CREATED)
