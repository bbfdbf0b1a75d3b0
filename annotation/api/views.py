"""The REST API for scripts and other tools (the browser uses the htmx pages). Token auth:
`python manage.py drf_create_token USERNAME` prints a token; send it as
`Authorization: Token <key>`. Schema at /api/schema/, browsable docs at /api/docs/.

Same access rules as the pages (annotation/access.py): a study you are not a member of is a
404, so is a card outside your groups. Round 1 is blind: no response here ever carries
another annotator's round-1 labels to someone who annotates that card while it is in round 1,
whatever their role; the leads' list of all annotations goes through the same rule
(`access.round1_hidden_q`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from taxonomy.models import TaxonomyVersion

from .. import evidence
from ..access import (
    agreement_locked_reason,
    get_card_for_annotator,
    get_study_for_lead,
    get_study_for_user,
    round1_hidden_q,
)
from ..models import (
    Annotation,
    CardState,
    JobKind,
    JobStatus,
    Membership,
    Role,
    RoundClosed,
    RoundOutOfRange,
    Source,
    Study,
    study_labels,
)
from ..models.queue import KeptCards
from ..opensort.access import labels_locked
from .common import (
    conversation_named,
    page_of,
    paginate,
    read_query,
    responses,
)
from .parsers import JSONBodyParser
from .serializers import (
    AgreementQuerySerializer,
    AnnotationInputSerializer,
    AnnotationOutputSerializer,
    AnnotationsQuerySerializer,
    CardDetailOutputSerializer,
    CardOutputSerializer,
    CardsQuerySerializer,
    StudyOutputSerializer,
    TaxonomyOutputSerializer,
)


@extend_schema(
    operation_id="studies_list", responses=responses({200: StudyOutputSerializer(many=True)})
)
@api_view(["GET"])
def studies(request: Request) -> Response:
    """The studies I am a member of, with my role in each."""
    related = ("taxonomy_version__taxonomy",)
    if request.user.is_superuser:
        rows = list(Study.objects.select_related(*related).order_by("slug"))
        for study in rows:
            study.role = Role.LEAD
    else:
        memberships = Membership.objects.filter(user=request.user).select_related(
            *(f"study__{r}" for r in related)
        )
        rows = []
        for membership in memberships.order_by("study__slug"):
            membership.study.role = membership.role
            rows.append(membership.study)
    return Response(StudyOutputSerializer(rows, many=True).data)


@extend_schema(
    operation_id="studies_taxonomy_retrieve",
    responses=responses({200: TaxonomyOutputSerializer}, 404),
)
@api_view(["GET"])
def taxonomy(request: Request, slug: str) -> Response:
    """The study's taxonomy version: axes, categories and the types to label with."""
    study, _ = get_study_for_user(request.user, slug)
    version = (
        TaxonomyVersion.objects.select_related("taxonomy")
        .prefetch_related("axes__categories__types")
        .get(pk=study.taxonomy_version_id)
    )
    return Response(TaxonomyOutputSerializer(version).data)


@extend_schema(
    operation_id="studies_cards_list",
    parameters=[CardsQuerySerializer],
    responses=responses({200: page_of(CardOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def cards(request: Request, slug: str) -> Response:
    """My cards: every turn of the conversations assigned to my groups that label turns, in
    queue order; from the kept queue (models/queue.KeptCards), as the My cards page: a page
    costs the same with 40 or 40,000 cards."""
    study, _ = get_study_for_user(request.user, slug)
    done = read_query(request, CardsQuerySerializer).get("done")
    state = "" if done is None else "labelled" if done else "todo"
    return paginate(request, KeptCards(study, request.user, state), CardOutputSerializer)


@extend_schema(
    operation_id="studies_cards_retrieve",
    responses=responses({200: CardDetailOutputSerializer}, 403, 404),
)
@api_view(["GET"])
def card(request: Request, slug: str, turn_id: int) -> Response:
    """One card, with my own current round-1 annotation (never anyone else's)."""
    study, _ = get_study_for_user(request.user, slug)
    turn, _ = get_card_for_annotator(request.user, study, turn_id)
    turn.annotation = (
        Annotation.objects.current()
        .filter(turn=turn, annotator=request.user, round=1)
        .prefetch_related("types")
        .first()
    )
    return Response(CardDetailOutputSerializer(turn).data)


@extend_schema(
    operation_id="studies_cards_annotation_update",
    request=AnnotationInputSerializer,
    responses=responses({200: AnnotationOutputSerializer}, 400, 403, 404, 409),
)
@api_view(["PUT"])
@parser_classes([JSONBodyParser])  # labels are a list and the span an object: JSON only
def annotate(request: Request, slug: str, turn_id: int) -> Response:
    """Save my labels for a card: a new revision, the previous one kept as history.
    `labels: []` means "no smell"."""
    study, _ = get_study_for_user(request.user, slug)
    turn, group = get_card_for_annotator(request.user, study, turn_id)
    _refuse_open_sort(group)
    serializer = AnnotationInputSerializer(
        data=request.data, context={"taxonomy_version": study.taxonomy_version}
    )
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    # the server decides the round (models.CardRound): the client's (1 unless given) is only
    # checked against it
    card_round = CardState.objects.round_of(turn, group)
    round = card_round.round
    try:
        card_round.check_asked(data["round"])
    except RoundOutOfRange as e:
        raise ValidationError({"round": [str(e)]}) from None
    except RoundClosed as e:
        return _conflict(str(e))
    locked = labels_locked(study, request.user, turn) if round == 1 else ""
    if locked:  # seen the open sort's board: the card page refuses alike
        return _conflict(f"{locked} Nothing was saved.")
    try:
        annotation = Annotation.submit(
            turn=turn,
            group=group,
            annotator=request.user,
            types=data["labels"],
            # checked again under the card's lock: a card that moved on meanwhile is a 409
            round=round,
            note=data["note"],
            **_evidence(turn, data),
            confidence=data["confidence"],
            source=Source.API,
            taxonomy_version=study.taxonomy_version,
        )
    except RoundClosed as e:
        return _conflict(str(e))
    return Response(AnnotationOutputSerializer(annotation).data)


class OpenSortConflict(APIException):
    status_code = status.HTTP_409_CONFLICT


def _refuse_open_sort(group) -> None:
    """A 409 for labels on a card whose group open-sorts: its annotators tag it on the card
    page (their tags become round-1 labels at the freeze), so that no label comes first."""
    refusal = group.open_sort_refusal()
    if refusal:
        raise OpenSortConflict(refusal[0].upper() + refusal[1:] + ".")


def _evidence(turn, data: dict) -> dict:
    """The input's `evidence` and `span`: a quote checked at its span (400 naming
    evidence_span), or free text, stripped as the form strips it."""
    if data["evidence_span"] is None:
        return {"evidence": data["evidence"].strip(), "span": None}
    try:
        span, quote = evidence.span_at_index(turn, data["evidence_span"], data["evidence"])
    except evidence.EvidenceError as e:
        raise ValidationError({"evidence_span": [str(e)]}) from e
    return {"evidence": quote, "span": span}


def _conflict(message: str) -> Response:
    return Response({"detail": message}, status=status.HTTP_409_CONFLICT)


@extend_schema(
    operation_id="studies_annotations_list",
    parameters=[AnnotationsQuerySerializer],
    responses=responses({200: page_of(AnnotationOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def annotations(request: Request, slug: str) -> Response:
    """Leads only: every current annotation of the study, all annotators and rounds, but
    for a lead who annotates: not the others' labels on their cards still in round 1.
    Unfiltered, for a lead who annotates nothing, the count is the kept figures' (issue 25:
    counting 800,000 labels took a second)."""
    study = get_study_for_lead(request.user, slug)
    query = read_query(request, AnnotationsQuerySerializer)
    filters = _annotation_filters(study, query)
    rows = Annotation.objects.current().filter(turn__conversation__study=study, **filters)
    blind = study.groups.filter(annotators=request.user).exists()
    if blind:
        rows = rows.exclude(round1_hidden_q(request.user, study))
    rows = (
        rows.select_related("turn__conversation", "annotator", "evidence_turn")
        .prefetch_related("types")
        .order_by("id")
    )
    count = None if blind or filters else study_labels(study)
    return paginate(request, rows, AnnotationOutputSerializer, count=count)


def _annotation_filters(study, query: dict) -> dict:
    names = {"round": "round", "annotator": "annotator__username"}
    filters = {names[k]: v for k, v in query.items() if k in names}
    if "conversation" in query:
        filters["turn__conversation_id"] = conversation_named(study, query["conversation"])
    return filters


@extend_schema(
    operation_id="studies_agreement_retrieve",
    parameters=[AgreementQuerySerializer],
    responses=responses(
        {
            200: OpenApiResponse(
                response=OpenApiTypes.OBJECT,
                description="The result of the latest finished agreement job: study, round, "
                "taxonomy_version, computed_at, data_stamp and per axis the report of "
                "AGREEMENT.md ('report') and the report page's tables ('extras'). A pair "
                "of annotators is keyed by their user ids, '12|7', and names both: "
                "{'a': {'id', 'name'}, 'b': {...}} (pairs of groups by group ids). 404 also "
                "when no agreement job has finished yet",
            )
        },
        400,
        403,
        404,
    ),
)
@api_view(["GET"])
def agreement(request: Request, slug: str) -> Response:
    """Leads only: the latest finished agreement job's result (AGREEMENT.md)."""
    study = get_study_for_lead(request.user, slug)
    locked = agreement_locked_reason(request.user, study)
    if locked:
        raise PermissionDenied(locked)
    jobs = study.jobs.filter(kind=JobKind.AGREEMENT, status=JobStatus.DONE)
    round = read_query(request, AgreementQuerySerializer).get("round")
    if round is not None:
        jobs = jobs.filter(params__round=round)
    job = jobs.order_by("-finished_at", "-id").only("result").first()
    if job is None:
        raise NotFound(
            "No agreement job has finished for this study yet: start one on the study page "
            "or run `python manage.py agreement SLUG`."
        )
    return Response(job.result)
