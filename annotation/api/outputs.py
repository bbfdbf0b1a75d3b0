"""Serializers of the study's other endpoints (conversations, turns, groups, disputes, the
discussion, consensus, proposals, jobs and exports): outputs only read, inputs only
validate; the views save through the domain's functions."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..exports import EXPORT_FORMATS, UNITS
from ..models import CardStatus, JobKind, JobStatus, ProposalStatus
from .common import ClosedSerializer, PageQuerySerializer, StrictBooleanField, TextField
from .serializers import (
    CONVERSATION_FILTER,
    KEY_HELP,
    KEY_MAX,
    TYPE_CODES,
    MyAnnotationOutputSerializer,
    codes_of,
)

# -- query parameters ------------------------------------------------------------------------


class ConversationsQuerySerializer(PageQuerySerializer):
    group = TextField(required=False, max_length=100, help_text="Only those assigned to this group")
    external_id = TextField(
        required=False,
        max_length=255,
        help_text="Only those with this external id (several may have it: each has its key)",
    )
    key = TextField(required=False, max_length=KEY_MAX, help_text="Only the one with this key")


class DisputesQuerySerializer(PageQuerySerializer):
    status = serializers.ChoiceField(
        required=False, choices=[CardStatus.DISPUTED, CardStatus.ESCALATED]
    )
    group = TextField(required=False, max_length=100, help_text="Only this group's (its name)")


class DiscussionQuerySerializer(serializers.Serializer):
    group = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="Which group's discussion of a shared card (its id): by default mine, "
        "else the first I moderate",
    )


class ConsensusQuerySerializer(PageQuerySerializer):
    group = TextField(required=False, max_length=100, help_text="Only this group's (its name)")
    conversation = TextField(required=False, max_length=KEY_MAX, help_text=CONVERSATION_FILTER)


class ProposalsQuerySerializer(PageQuerySerializer):
    status = serializers.ChoiceField(required=False, choices=ProposalStatus.choices)


class JobsQuerySerializer(PageQuerySerializer):
    kind = serializers.ChoiceField(required=False, choices=JobKind.choices)
    status = serializers.ChoiceField(required=False, choices=JobStatus.choices)


# -- inputs ------------------------------------------------------------------------------------


class ExportInputSerializer(ClosedSerializer):
    format = serializers.ChoiceField(choices=EXPORT_FORMATS)
    raw = StrictBooleanField(
        required=False, default=False, help_text="every label of every round, not the gold"
    )
    with_text = StrictBooleanField(required=False, default=False, help_text="with the turns' texts")
    unit = serializers.ChoiceField(
        choices=UNITS,
        required=False,
        default="turn",
        help_text="turn: the cards (the default); episode: the episodes, one row per episode "
        "and group with the group's consensus (raw: one row per judgement); coverage: the "
        "sessions' coverage ratings (every rating, raw or not: there is no gold file of them)",
    )


class ConsensusInputSerializer(ClosedSerializer):
    """Needs the study's taxonomy version in the context, as AnnotationInputSerializer."""

    labels = serializers.ListField(
        child=TextField(max_length=100),
        allow_empty=True,
        help_text='Type codes; [] "no smell". ' + TYPE_CODES,
    )
    rationale = TextField(
        kind="rationale", help_text="Why: a decision without a reason is not kept"
    )

    def validate_labels(self, codes: list[str]):
        from .serializers import AnnotationInputSerializer

        return AnnotationInputSerializer(context=self.context).validate_labels(codes)


class ProposalInputSerializer(ClosedSerializer):
    """Only the shapes: the page's form (ProposalForm) checks the rest, for both."""

    name = TextField(max_length=200)
    definition = TextField(kind="definition")
    reason = TextField(kind="reason", help_text="why none of the existing types fits")
    axis = TextField(
        required=False,
        default="",
        allow_blank=True,
        max_length=50,
        help_text="The code of an axis of the study's taxonomy (GET /api/studies/{slug}/"
        "taxonomy/; not an enum: one schema serves every study); empty: the first axis",
    )


# -- outputs -----------------------------------------------------------------------------------


class ConversationOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    key = serializers.CharField(help_text=KEY_HELP)
    n_turns = serializers.IntegerField()
    source_format = serializers.CharField()
    set_aside = serializers.CharField()
    groups = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_groups(self, conversation) -> list[str]:
        return [g.name for g in conversation.groups.all()]


class TurnOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="the card's id in the cards endpoints")
    index = serializers.IntegerField()
    user_text = serializers.CharField()
    reply_text = serializers.CharField()
    reply_empty = serializers.BooleanField()
    reply_missing = serializers.BooleanField()


class GroupOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    phase = serializers.CharField(source="effective_phase")
    moderator = serializers.CharField(source="moderator.username", allow_null=True)
    annotators = serializers.SerializerMethodField()
    n_conversations = serializers.IntegerField()

    def get_annotators(self, group) -> list[str]:
        return sorted(u.username for u in group.annotators.all())


class LabelsOutputSerializer(MyAnnotationOutputSerializer):
    """Someone's labels in a round, as the discussion page shows them."""

    annotator = serializers.CharField(source="annotator.username")


class DisputeOutputSerializer(serializers.Serializer):
    turn_id = serializers.IntegerField()
    conversation = serializers.CharField(source="turn.conversation.external_id")
    conversation_key = serializers.CharField(source="turn.conversation.key", help_text=KEY_HELP)
    turn = serializers.IntegerField(source="turn.index")
    group_id = serializers.IntegerField()
    group = serializers.CharField(source="group.name")
    status = serializers.CharField()
    round = serializers.IntegerField(help_text="the round under way")
    labels = serializers.SerializerMethodField(
        help_text="the group's current labels of the round under way"
    )

    @extend_schema_field(LabelsOutputSerializer(many=True))
    def get_labels(self, state) -> list:
        # the views prefetch turn.current (blindness applied) and the group's annotators
        people = {u.pk for u in state.group.annotators.all()}
        rows = [
            a for a in state.turn.current if a.round == state.round and a.annotator_id in people
        ]
        return LabelsOutputSerializer(rows, many=True).data


class CommentOutputSerializer(serializers.Serializer):
    author = serializers.CharField(source="author.username")
    round = serializers.IntegerField()
    text = serializers.CharField()
    created_at = serializers.DateTimeField()


class ConsensusOutputSerializer(serializers.Serializer):
    turn_id = serializers.IntegerField()
    conversation = serializers.CharField(source="turn.conversation.external_id")
    conversation_key = serializers.CharField(source="turn.conversation.key", help_text=KEY_HELP)
    turn = serializers.IntegerField(source="turn.index")
    group = serializers.CharField(source="group.name")
    labels = serializers.SerializerMethodField()
    method = serializers.CharField()
    from_round = serializers.IntegerField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True)
    decided_at = serializers.DateTimeField()
    rationale = serializers.CharField()

    def get_labels(self, consensus) -> list[str]:
        return codes_of(consensus)


class DiscussionOutputSerializer(serializers.Serializer):
    turn_id = serializers.IntegerField(source="turn.pk")
    conversation = serializers.CharField(source="turn.conversation.external_id")
    conversation_key = serializers.CharField(source="turn.conversation.key", help_text=KEY_HELP)
    turn = serializers.IntegerField(source="turn.index")
    group_id = serializers.IntegerField(source="group.pk")
    group = serializers.CharField(source="group.name")
    status = serializers.CharField()
    round = serializers.IntegerField()
    annotations = LabelsOutputSerializer(many=True, help_text="every round, oldest first")
    comments = CommentOutputSerializer(many=True)
    consensus = ConsensusOutputSerializer(allow_null=True)
    can_revise = serializers.BooleanField()
    can_comment = serializers.BooleanField()
    can_decide = serializers.BooleanField()


class ProposalOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    turn_id = serializers.IntegerField()
    conversation = serializers.CharField(source="turn.conversation.external_id")
    conversation_key = serializers.CharField(source="turn.conversation.key", help_text=KEY_HELP)
    turn = serializers.IntegerField(source="turn.index")
    proposer = serializers.CharField(source="proposer.username", allow_null=True)
    name = serializers.CharField()
    definition = serializers.CharField()
    reason = serializers.CharField()
    axis = serializers.CharField(source="axis.code", allow_null=True)
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = serializers.CharField()
    outcome = serializers.CharField()
    mapped_to_code = serializers.CharField()
