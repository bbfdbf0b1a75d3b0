"""Episodes in the API (issue 21), under the episode card's rules (annotation/access.py,
annotation/views/episode_card.py):

- the list: the episodes I may read, as the pages show them: a lead every episode of the
  study, anyone else those of the sessions of the episode groups they annotate or moderate;
  an annotator never the episodes another person wrote before they rated the session's
  coverage (episodes/blind.episodes_unseen_by); never a running import's sessions;
- one episode, with its evidence quotes: who may open its card (access.get_episode_for_member:
  its group's annotators, moderator, leads; a 404 for anyone else); an annotator's opening
  marks it seen, as the card's does (the session's coverage question);
- its judgements in the group: access.episode_judgements, the card's rule: an annotator of
  the episode's group sees only their own until round 1 is over for them;
- a judgement: the card's submit (actions/episode_judgements.py), the server deciding the
  round: `round` (1 unless given) is only checked, a 409 when it is not the round open now.

What an extraction run's model said (run_valid, run_invalid_reason, run_labels,
confidence) is only for whoever may see the machine judges (episodes/blind.
machines_visible_to): never an annotator or a moderator; the keys are absent otherwise."""

from __future__ import annotations

from django.db.models import Q
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ..access import episode_judgements, get_episode_for_member, get_study_for_user
from ..actions.episode_judgements import JudgementError, read, submit
from ..actions.episodes import mark_seen
from ..episodes import rounds
from ..episodes.blind import episodes_unseen_by, machines_visible_to
from ..episodes.reasons import INVALID_REASONS
from ..models import Conversation, Episode, Group, Role, RoundClosed, Unit
from .common import (
    ClosedSerializer,
    PageQuerySerializer,
    StrictBooleanField,
    StrictIntegerField,
    TextField,
    conversation_named,
    page_of,
    paginate,
    read_query,
    responses,
)
from .parsers import JSONBodyParser
from .serializers import CONVERSATION_FILTER, KEY_HELP, KEY_MAX

NOT_ANNOTATOR = "Only the episode's annotators judge it: you may read it."
MACHINE_FIELDS = ("run_valid", "run_invalid_reason", "run_labels", "confidence")
MACHINE_HELP = (
    "what the extraction run's model said (its validator's verdict, labels, the extractor's "
    "confidence): only for whoever may see the machine judges (leads not under the "
    "agreement lock nor judging an episode in round 1); absent for everyone else"
)
LABELS_HELP = "{axis code: [type codes]} of the study's taxonomy"


# -- serializers ---------------------------------------------------------------------------


class EpisodesQuerySerializer(PageQuerySerializer):
    conversation = TextField(required=False, max_length=KEY_MAX, help_text=CONVERSATION_FILTER)
    run = TextField(
        required=False, max_length=100, help_text="Only this extraction run's episodes (its name)"
    )
    group = TextField(
        required=False, max_length=100, help_text="Only the episodes of this group's sessions"
    )


class GroupQuerySerializer(serializers.Serializer):
    group = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="A moderator or lead: which of the groups sharing the episode's session "
        "(its id; an annotator always reads their own group's)",
    )


class EpisodeOutputSerializer(serializers.Serializer):
    """Needs `machines` (bool) in the context: whether the reader may see MACHINE_FIELDS."""

    id = serializers.IntegerField()
    conversation = serializers.CharField(source="conversation.external_id")
    conversation_key = serializers.CharField(source="conversation.key", help_text=KEY_HELP)
    run = serializers.SerializerMethodField(
        help_text="the extraction run's name; \"\" for a person's"
    )
    created_by = serializers.SerializerMethodField(
        help_text="the username of the person who wrote it; null for a run's"
    )
    first_turn = serializers.IntegerField(help_text="1-based index of its first turn")
    last_turn = serializers.IntegerField(help_text="1-based index of its last turn (inclusive)")
    goal = serializers.CharField()
    created_at = serializers.DateTimeField()
    run_valid = serializers.BooleanField(required=False, allow_null=True, help_text=MACHINE_HELP)
    run_invalid_reason = serializers.CharField(required=False, help_text=MACHINE_HELP)
    run_labels = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text=MACHINE_HELP,
    )
    confidence = serializers.FloatField(required=False, allow_null=True, help_text=MACHINE_HELP)

    def get_run(self, episode) -> str:
        return episode.run.name if episode.run_id else ""

    def get_created_by(self, episode) -> str | None:
        if episode.run_id or episode.created_by_id is None:
            return None
        return episode.created_by.username

    def to_representation(self, episode):
        data = super().to_representation(episode)
        if not self.context.get("machines"):
            for name in MACHINE_FIELDS:
                data.pop(name, None)
        return data


class EvidenceQuoteOutputSerializer(serializers.Serializer):
    turn = serializers.IntegerField(source="turn.index", help_text="1-based index of the turn")
    part = serializers.CharField(
        help_text="user, reply, or a reply part: thinking, tool_call, tool_result"
    )
    part_index = serializers.IntegerField(
        allow_null=True, help_text="a reply part's 0-based position among the turn's parts"
    )
    start = serializers.IntegerField(help_text="first character of the stored text, 0-based")
    end = serializers.IntegerField(help_text="one past the last character")
    quote = serializers.CharField()


class EpisodeDetailOutputSerializer(EpisodeOutputSerializer):
    group = serializers.CharField(source="seat_group.name", help_text="the group I read it in")
    status = serializers.CharField(
        source="state.status", help_text="open (round 1), disputed, escalated or agreed"
    )
    round = serializers.IntegerField(
        source="state.open_round",
        allow_null=True,
        help_text="the round its annotators judge now; null once agreed or escalated",
    )
    evidence = EvidenceQuoteOutputSerializer(many=True, source="quotes")


class JudgementOutputSerializer(serializers.Serializer):
    annotator = serializers.CharField(source="annotator.username")
    round = serializers.IntegerField()
    valid = serializers.BooleanField()
    invalid_reason = serializers.CharField(help_text='a reason code; "" for a valid episode')
    labels = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), help_text=LABELS_HELP
    )
    source = serializers.CharField()
    created_at = serializers.DateTimeField()


class JudgementsOutputSerializer(serializers.Serializer):
    episode = serializers.IntegerField(source="episode.pk")
    group = serializers.CharField(source="group.name")
    status = serializers.CharField(
        source="state.status", help_text="open (round 1), disputed, escalated or agreed"
    )
    round = serializers.IntegerField(
        source="state.open_round",
        allow_null=True,
        help_text="the round its annotators judge now; null once agreed or escalated",
    )
    method = serializers.CharField(
        source="state.method",
        allow_null=True,
        help_text="how the consensus came (unanimous, single, discussion, moderator), once agreed",
    )
    judgements = JudgementOutputSerializer(
        many=True,
        help_text="the current judgements I may read, oldest round first: an annotator of "
        "the group only their own until round 1 is over; never a machine judge's",
    )


class JudgementInputSerializer(ClosedSerializer):
    valid = StrictBooleanField(help_text="is the episode supported by its evidence?")
    invalid_reason = TextField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="when not valid: one of " + ", ".join(INVALID_REASONS),
    )
    labels = serializers.DictField(
        child=serializers.ListField(child=TextField(max_length=100)),
        required=False,
        default=dict,
        help_text="when valid: " + LABELS_HELP + " under each axis's rule (pick one, at "
        "most N, its condition on another axis): otherwise a 400 naming labels",
    )
    round = StrictIntegerField(
        required=False,
        default=1,
        min_value=1,
        help_text="The round this judgement is meant for (1 unless given). Only checked: the "
        "server saves in the episode's round under way and answers 409 if it is another one.",
    )


# -- views -----------------------------------------------------------------------------------


@extend_schema(
    operation_id="studies_episodes_list",
    parameters=[EpisodesQuerySerializer],
    responses=responses({200: page_of(EpisodeOutputSerializer)}, 400, 404),
)
@api_view(["GET"])
def episodes(request: Request, slug: str) -> Response:
    """The episodes I may read (a lead: every one of the study; else those of the sessions
    of the episode groups I annotate or moderate), in session and turn-range order."""
    study, role = get_study_for_user(request.user, slug)
    query = read_query(request, EpisodesQuerySerializer)
    rows = Episode.objects.filter(
        conversation__study=study, conversation__in=Conversation.objects.visible()
    )
    if role != Role.LEAD:
        mine = Group.objects.filter(study=study, unit=Unit.EPISODE).filter(
            Q(annotators=request.user) | Q(moderator=request.user)
        )
        rows = rows.filter(
            conversation__in=Conversation.objects.filter(assignments__group__in=mine)
        )
    unseen = episodes_unseen_by(request.user, study)
    if unseen:
        rows = rows.exclude(pk__in=unseen)
    if "conversation" in query:
        rows = rows.filter(conversation_id=conversation_named(study, query["conversation"]))
    if "run" in query:
        rows = rows.filter(run__name=query["run"])
    if "group" in query:
        named = Conversation.objects.filter(study=study, assignments__group__name=query["group"])
        rows = rows.filter(conversation__in=named)
    rows = (
        rows.select_related("conversation", "run", "created_by")
        .defer("conversation__metadata")
        .order_by("conversation_id", "first_turn", "last_turn", "pk")
    )
    machines = machines_visible_to(request.user, study)
    return paginate(request, rows, EpisodeOutputSerializer, machines=machines)


def seat_of(request: Request, slug: str, episode_id: int):
    """The episode as I may open it (access.get_episode_for_member), of a session whose
    import is done (a 404 otherwise, as its page)."""
    study, role = get_study_for_user(request.user, slug)
    group_id = read_query(request, GroupQuerySerializer).get("group")
    seat = get_episode_for_member(request.user, study, role, episode_id, group_id)
    if not Conversation.objects.visible().filter(pk=seat.episode.conversation_id).exists():
        raise Http404("No such episode")
    return study, seat


@extend_schema(
    operation_id="studies_episodes_retrieve",
    parameters=[GroupQuerySerializer],
    responses=responses({200: EpisodeDetailOutputSerializer}, 400, 404),
)
@api_view(["GET"])
def episode(request: Request, slug: str, episode_id: int) -> Response:
    """One episode with its evidence quotes and its state in my group (an annotator's
    reading marks it seen, as opening its card does)."""
    study, seat = seat_of(request, slug, episode_id)
    if seat.is_annotator:
        mark_seen(request.user, seat.group, seat.episode)
    episode = seat.episode
    episode.seat_group = seat.group
    episode.state = rounds.state_of(episode.pk, seat.group)
    episode.quotes = list(episode.evidence.select_related("turn").order_by("order", "pk"))
    machines = not seat.is_annotator and machines_visible_to(request.user, study)
    return Response(EpisodeDetailOutputSerializer(episode, context={"machines": machines}).data)


class _Judgements:
    def __init__(self, user, seat) -> None:
        self.episode, self.group = seat.episode, seat.group
        self.state = rounds.state_of(self.episode.pk, self.group)
        self.judgements = list(
            episode_judgements(user, self.episode, self.group, self.state.revealed)
        )


@extend_schema(
    methods=["GET"],
    operation_id="studies_episodes_judgements_retrieve",
    parameters=[GroupQuerySerializer],
    responses=responses({200: JudgementsOutputSerializer}, 400, 404),
)
@extend_schema(
    methods=["POST"],
    operation_id="studies_episodes_judgements_create",
    parameters=[GroupQuerySerializer],
    request=JudgementInputSerializer,
    responses=responses({200: JudgementsOutputSerializer}, 400, 403, 404, 409),
)
@api_view(["GET", "POST"])
@parser_classes([JSONBodyParser])
def judgements(request: Request, slug: str, episode_id: int) -> Response:
    """GET: the episode's judgements in my group that I may read (an annotator of the group
    only their own until round 1 is over). POST (the group's annotators): my judgement,
    saved as the episode card saves it, in the round under way (409 if `round` is another);
    the answer is the judgements as I may read them after it."""
    study, seat = seat_of(request, slug, episode_id)
    if request.method == "POST":
        if not seat.is_annotator:
            raise PermissionDenied(NOT_ANNOTATOR)
        serializer = JudgementInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        posted = posted_of(serializer.validated_data, study.taxonomy_version.type_list())
        try:
            submit(
                seat.episode, seat.group, request.user, serializer.validated_data["round"], posted
            )
        except RoundClosed as e:
            return Response({"detail": str(e)}, status=409)
    return Response(JudgementsOutputSerializer(_Judgements(request.user, seat)).data)


def posted_of(data: dict, types: list):
    """The input as the card's form posts it, read by the card's own rules
    (actions/episode_judgements.read); its refusals a 400 naming the field."""
    form = {
        "valid": "1" if data["valid"] else "0",
        "invalid_reason": data["invalid_reason"],
        "types": [f"{axis}:{code}" for axis, codes in data["labels"].items() for code in codes],
    }
    if not data["valid"] and data["labels"]:
        raise ValidationError({"labels": ["labels are for a valid episode: send {} or valid true"]})
    try:
        return read(form, types)
    except JudgementError as e:
        field = "invalid_reason" if "reason" in str(e).lower() else "labels"
        raise ValidationError({field: [str(e)]}) from None
