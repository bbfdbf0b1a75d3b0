"""An episode's discussion in the API (issue 21: what works on cards works on episodes), as
the cards' (api/discussion.py) and under the episode card's rules (views/episode_moderation.py,
access.py):

- the discussion: who may open the episode (access.get_episode_for_member: its group's
  annotators, its moderator, a lead; a 404 for anyone else), but a 403 for one of its
  annotators until they may read its thread (access.may_see_episode_discussion: round 1 over
  and judged by them in round 1), as the card's discussion is refused while in round 1; its
  judgements through access.episode_judgements (never a machine judge's; an extraction run's
  verdict, labels and confidence are not in it at all), the thread, the moderator's decision;
- a comment: the thread's post (actions/episode_decisions.comment), its rules the page's: a
  409 before round 1 is over for the writer or once the discussion is closed, a 400 naming
  `text` for an empty or too long one;
- the decision: the group's moderator or a lead who does not annotate the episode, as the
  card's decide form (actions/episode_decisions.decide): the verdict read by the annotators'
  rules (a 400 naming the field), a 409 unless escalated and undecided."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ..access import episode_judgements, may_see_episode_discussion
from ..actions import episode_decisions
from ..actions.episode_decisions import CommentRefused, DecisionRefused
from ..episodes import rounds
from ..models import CardStatus
from .common import ClosedSerializer, TextField, responses
from .episodes import (
    LABELS_HELP,
    GroupQuerySerializer,
    JudgementInputSerializer,
    JudgementOutputSerializer,
    posted_of,
    seat_of,
)
from .outputs import CommentOutputSerializer
from .parsers import JSONBodyParser
from .serializers import KEY_HELP

STILL_IN_ROUND_1 = (
    "This episode is still in round 1 for you: its discussion opens once every annotator of "
    "your group has judged it and you have judged it in round 1, so that your judgement "
    "stays your own."
)
NOT_YET = (
    "The discussion opens once round 1 is over and you have judged the episode: nothing was sent."
)
ANNOTATORS_DO_NOT_DECIDE = "You judge this episode: its moderator or a lead decides it."


# -- serializers ---------------------------------------------------------------------------


class EpisodeDecisionOutputSerializer(serializers.Serializer):
    episode = serializers.IntegerField(source="episode_id")
    group = serializers.CharField(source="group.name")
    valid = serializers.BooleanField()
    invalid_reason = serializers.CharField(help_text='a reason code; "" for a valid episode')
    labels = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), help_text=LABELS_HELP
    )
    from_round = serializers.IntegerField(help_text="the round that escalated it")
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True)
    decided_at = serializers.DateTimeField()
    rationale = serializers.CharField()


class EpisodeDiscussionOutputSerializer(serializers.Serializer):
    episode = serializers.IntegerField(source="episode.pk")
    conversation = serializers.CharField(source="episode.conversation.external_id")
    conversation_key = serializers.CharField(source="episode.conversation.key", help_text=KEY_HELP)
    first_turn = serializers.IntegerField(source="episode.first_turn")
    last_turn = serializers.IntegerField(source="episode.last_turn")
    group_id = serializers.IntegerField(source="group.pk")
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
        help_text="every round's current judgements of the group's annotators, oldest round "
        "first (never a machine judge's, never the extraction run's own verdict)",
    )
    comments = CommentOutputSerializer(many=True, help_text="the thread, oldest first")
    decision = EpisodeDecisionOutputSerializer(
        allow_null=True, help_text="the moderator's decision, once decided"
    )
    can_comment = serializers.BooleanField(help_text="the thread is open to me")
    can_decide = serializers.BooleanField(help_text="I may decide it now (escalated)")


class CommentInputSerializer(ClosedSerializer):
    text = TextField(kind="comment", help_text="The comment, added to the thread")


class DecisionInputSerializer(JudgementInputSerializer):
    rationale = TextField(
        kind="rationale", help_text="Why: a decision without a reason is not kept"
    )

    def get_fields(self):
        fields = super().get_fields()
        del fields["round"]  # the server decides an escalated episode, in no round
        return fields


# -- views -----------------------------------------------------------------------------------


class _Discussion:
    def __init__(self, user, seat, state) -> None:
        self.episode, self.group, self.state = seat.episode, seat.group, state
        self.judgements = list(episode_judgements(user, self.episode, self.group, state.revealed))
        self.comments = list(episode_decisions.thread(self.episode, self.group))
        self.decision = episode_decisions.current_decision(self.episode, self.group)
        discussed = state.status in (CardStatus.DISPUTED, CardStatus.ESCALATED)
        self.can_comment = discussed
        self.can_decide = seat.is_moderator and state.status == CardStatus.ESCALATED


@extend_schema(
    operation_id="studies_episodes_discussion_retrieve",
    parameters=[GroupQuerySerializer],
    responses=responses({200: EpisodeDiscussionOutputSerializer}, 400, 403, 404),
)
@api_view(["GET"])
def discussion(request: Request, slug: str, episode_id: int) -> Response:
    """An episode's discussion in one group: every round's judgements, the thread, the
    moderator's decision. One of its annotators: only once round 1 is over and they judged
    it in round 1 (a 403 before)."""
    _, seat = seat_of(request, slug, episode_id)
    state = rounds.state_of(seat.episode.pk, seat.group)
    if not may_see_episode_discussion(request.user, seat, state.revealed):
        raise PermissionDenied(STILL_IN_ROUND_1)
    body = _Discussion(request.user, seat, state)
    return Response(EpisodeDiscussionOutputSerializer(body).data)


@extend_schema(
    operation_id="studies_episodes_comments_create",
    parameters=[GroupQuerySerializer],
    request=CommentInputSerializer,
    responses=responses(
        {201: CommentOutputSerializer, 200: CommentOutputSerializer}, 400, 404, 409
    ),
)
@api_view(["POST"])
@parser_classes([JSONBodyParser])
def comment(request: Request, slug: str, episode_id: int) -> Response:
    """Add to the episode's thread in its group (its annotators once they judged round 1
    and round 1 is over, its moderator, a lead), in the round under way: 201 and the
    comment; the same text again in the same round (a double submit) is kept once: 200 and
    the comment kept. A 409 while in round 1 or once agreed or decided."""
    _, seat = seat_of(request, slug, episode_id)
    state = rounds.state_of(seat.episode.pk, seat.group)
    if not may_see_episode_discussion(request.user, seat, state.revealed):
        return Response({"detail": NOT_YET}, status=status.HTTP_409_CONFLICT)
    serializer = CommentInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    try:
        saved = episode_decisions.comment(
            seat.episode, seat.group, request.user, serializer.validated_data["text"]
        )
    except CommentRefused as e:
        if str(e).startswith(("Write", "Comment")):  # the text's fault, as the page's 422
            raise ValidationError({"text": [str(e)]}) from None
        return Response({"detail": str(e)}, status=status.HTTP_409_CONFLICT)
    if saved is None:
        kept = episode_decisions.thread(seat.episode, seat.group).filter(author=request.user)
        return Response(CommentOutputSerializer(kept.last()).data)
    return Response(CommentOutputSerializer(saved).data, status=status.HTTP_201_CREATED)


@extend_schema(
    operation_id="studies_episodes_decision_create",
    parameters=[GroupQuerySerializer],
    request=DecisionInputSerializer,
    responses=responses({201: EpisodeDecisionOutputSerializer}, 400, 403, 404, 409),
)
@api_view(["POST"])
@parser_classes([JSONBodyParser])
def decide(request: Request, slug: str, episode_id: int) -> Response:
    """The group's moderator or a lead who does not annotate the episode: its decision, as
    on the episode card (409 unless it is escalated and not decided yet)."""
    study, seat = seat_of(request, slug, episode_id)
    if seat.is_annotator:
        raise PermissionDenied(ANNOTATORS_DO_NOT_DECIDE)
    serializer = DecisionInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    d = serializer.validated_data
    posted = posted_of(d, study.taxonomy_version.type_list())
    try:
        decided = episode_decisions.decide(
            seat.episode, seat.group, request.user, posted, d["rationale"]
        )
    except DecisionRefused as e:
        if str(e).startswith("Rationale"):
            raise ValidationError({"rationale": [str(e)]}) from None
        return Response({"detail": str(e)}, status=status.HTTP_409_CONFLICT)
    return Response(EpisodeDecisionOutputSerializer(decided).data, status=status.HTTP_201_CREATED)
