"""Input and output serializers of the REST API, one pair per endpoint (HackSoft style):
outputs only read, inputs only validate, and neither saves anything."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from taxonomy.models import TaxonomyVersion, Type

from .. import conversation_keys
from ..evidence import PARTS as EVIDENCE_PARTS
from ..importers.annotations import LabelRecordError, resolve_labels
from .common import ClosedSerializer, PageQuerySerializer, StrictIntegerField, TextField

# -- query parameters (annotation/api/common.py reads them: a bad value is a 400) -----------

# a conversation named in a query: its key, or the ~1 that names the first of a repeated id
KEY_MAX = conversation_keys.MAX_LENGTH + len(conversation_keys.FIRST)
CONVERSATION_FILTER = (
    "Only this conversation's: its key, or its external id if no other conversation has it "
    "(an id several share is a 400 naming their keys; `<id>~1` names the first of them)"
)
KEY_HELP = "the conversation's key: unique in the study (its external id may repeat)"


class CardsQuerySerializer(PageQuerySerializer):
    done = serializers.BooleanField(
        required=False,
        help_text="true: only cards I have labelled in round 1; false: only the rest",
    )


class AnnotationsQuerySerializer(PageQuerySerializer):
    round = serializers.IntegerField(required=False, min_value=1, help_text="Only this round")
    annotator = TextField(required=False, max_length=150, help_text="Only this username's")
    conversation = TextField(required=False, max_length=KEY_MAX, help_text=CONVERSATION_FILTER)


class AgreementQuerySerializer(serializers.Serializer):
    round = serializers.IntegerField(
        required=False, min_value=1, help_text="Only jobs computed for this round"
    )


class StudyOutputSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.CharField()
    phase = serializers.CharField()
    taxonomy = serializers.CharField(source="taxonomy_version.taxonomy.slug")
    taxonomy_version = serializers.IntegerField(source="taxonomy_version.number")


class TypeOutputSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    definition = serializers.CharField()
    hotkey = serializers.CharField()


class CategoryOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    types = TypeOutputSerializer(many=True)


class AxisOutputSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    multi_select = serializers.BooleanField()
    max_labels = serializers.IntegerField(allow_null=True)
    # the axis is labelled only when another axis holds one of these codes ({} none)
    when = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    categories = CategoryOutputSerializer(many=True)


class TaxonomyOutputSerializer(serializers.Serializer):
    taxonomy = serializers.CharField(source="taxonomy.slug")
    name = serializers.CharField(source="taxonomy.name")
    version = serializers.IntegerField(source="number")
    frozen = serializers.BooleanField()
    axes = AxisOutputSerializer(many=True)


class CardOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    conversation = serializers.CharField(source="conversation.external_id")
    conversation_key = serializers.CharField(source="conversation.key", help_text=KEY_HELP)
    index = serializers.IntegerField()
    done = serializers.BooleanField(
        help_text="I have a current round-1 annotation (in an open sort: a tag set)"
    )


def codes_of(annotation) -> list[str]:
    # `types` is prefetched by the views; .all() keeps it to no query per row
    return [t.code for t in annotation.types.all()]


class EvidenceSpanInputSerializer(ClosedSerializer):
    """Where `evidence` is quoted from (annotation/evidence.py): the server checks the quote
    is exactly the stored text there."""

    turn = StrictIntegerField(
        min_value=1, help_text="1-based index of the turn: the card's or an earlier one"
    )
    part = serializers.ChoiceField(choices=list(EVIDENCE_PARTS))
    part_index = StrictIntegerField(
        min_value=0,
        required=False,
        allow_null=True,
        help_text="a reply part's (thinking, tool_call, tool_result) 0-based position in the "
        "turn's reply parts; absent for user and reply",
    )
    start = StrictIntegerField(min_value=0, help_text="first character, 0-based")
    end = StrictIntegerField(min_value=1, help_text="one past the last character")


class MyAnnotationOutputSerializer(serializers.Serializer):
    round = serializers.IntegerField()
    labels = serializers.SerializerMethodField()
    note = serializers.CharField()
    evidence = serializers.CharField()
    evidence_span = serializers.SerializerMethodField(
        help_text="Where `evidence` is quoted from, as the input takes it; null for free text"
    )
    confidence = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_labels(self, annotation) -> list[str]:
        return codes_of(annotation)

    @extend_schema_field(EvidenceSpanInputSerializer(allow_null=True))
    def get_evidence_span(self, annotation) -> dict | None:
        if annotation.evidence_turn_id is None:
            return None
        span = {
            "turn": annotation.evidence_turn.index,
            "part": annotation.evidence_part,
            "start": annotation.evidence_start,
            "end": annotation.evidence_end,
        }
        if annotation.evidence_part_index is not None:
            span["part_index"] = annotation.evidence_part_index
        return span


class CardDetailOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    conversation = serializers.CharField(source="conversation.external_id")
    conversation_key = serializers.CharField(source="conversation.key", help_text=KEY_HELP)
    index = serializers.IntegerField()
    n_turns = serializers.IntegerField(source="conversation.n_turns")
    user_text = serializers.CharField()
    reply_text = serializers.CharField()
    reply_parts = serializers.JSONField()
    reply_empty = serializers.BooleanField()
    reply_missing = serializers.BooleanField()
    annotation = MyAnnotationOutputSerializer(
        allow_null=True, help_text="My current round-1 annotation, or null"
    )


# A type code is the study's taxonomy's (GET .../taxonomy/ lists them). One schema serves
# every study, whatever its taxonomy, so it cannot list them as an enum: a schema-valid code
# the study does not have, or a set its axes refuse, is a 400 naming `labels`.
TYPE_CODES = (
    "Each the code of a type of the study's taxonomy (GET /api/studies/{slug}/taxonomy/ "
    "lists them; one schema serves every study, so it cannot list them here), at most one "
    "per single-choice axis, as many as an axis allows: otherwise a 400 naming labels."
)


class AnnotationInputSerializer(ClosedSerializer):
    """Needs the study's taxonomy version in the context as `taxonomy_version`."""

    labels = serializers.ListField(
        child=TextField(max_length=100),
        allow_empty=True,
        help_text='Type codes; [] means "no smell". ' + TYPE_CODES,
    )
    note = TextField(kind="note", required=False, allow_blank=True, default="")
    evidence = TextField(
        kind="evidence", required=False, allow_blank=True, default="", trim_whitespace=False
    )
    evidence_span = EvidenceSpanInputSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="With a quote in `evidence`: where it is in the stored text",
    )
    confidence = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=5
    )
    round = StrictIntegerField(
        required=False,
        default=1,
        min_value=1,
        help_text="The round these labels are meant for (1 unless given). Only checked: the "
        "server saves in the card's round under way and answers 409 if it is another one.",
    )

    def validate_labels(self, codes: list[str]) -> list[Type]:
        version: TaxonomyVersion = self.context["taxonomy_version"]
        try:
            return resolve_labels(codes, version.types_by_code(), version)
        except LabelRecordError as e:
            # the importer's message starts with the field name; the API names it by key
            raise serializers.ValidationError(str(e).removeprefix("labels: ")) from e


class AnnotationOutputSerializer(MyAnnotationOutputSerializer):
    """An annotation in the leads' list: mine (round, labels, note, ...) plus whose and where."""

    id = serializers.IntegerField()
    # DESIGN.md's words, as in the annotation JSONL: `turn` is the 1-based index in the
    # conversation; the card's database id (the cards endpoints' `id`) is `turn_id`
    turn_id = serializers.IntegerField()
    conversation = serializers.CharField(source="turn.conversation.external_id")
    conversation_key = serializers.CharField(source="turn.conversation.key", help_text=KEY_HELP)
    turn = serializers.IntegerField(source="turn.index")
    annotator = serializers.CharField(source="annotator.username")
    source = serializers.CharField()


# -- the label import (a background job) and a job's status ---------------------------------


class FormBooleanField(serializers.BooleanField):
    """A multipart boolean, as the schema writes one: `true` or `false` (a 400 otherwise)."""

    def to_internal_value(self, data):
        if data in ("true", "false", True, False):
            return data in ("true", True)
        self.fail("invalid", input=data)


class UploadField(serializers.FileField):
    """A file part, or the file's content as a plain form field (`curl -F 'file=<x.jsonl'`
    sends it so; the schema's `format: binary` allows both): named upload.jsonl then."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = SimpleUploadedFile("upload.jsonl", data.encode("utf-8", "surrogatepass"))
        return super().to_internal_value(data)


class LabelImportInputSerializer(ClosedSerializer):
    file = UploadField(help_text="JSONL of annotations, one record a line")
    create_members = FormBooleanField(
        required=False,
        default=False,
        help_text="create unknown annotators and groups, and seat annotators in the group",
    )
    judge = FormBooleanField(
        required=False,
        default=False,
        help_text="a reference annotator's round-1 labels: compared, never voting",
    )


class JobStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField(source="pk")
    status = serializers.CharField()
    status_url = serializers.CharField(help_text="GET it for the job's status and result")


class JobStatusSerializer(serializers.Serializer):
    """Needs `results` (access.JobResults, the reader's) in the context: a result computed
    from round-1 labels the reader may not see yet is null, and `result_withheld` says
    why."""

    id = serializers.IntegerField()
    kind = serializers.CharField(
        help_text="import (conversations), label_import (a JSONL of labels), export, "
        "agreement, filter (the coding filter; params apply false: a dry run), split or judge"
    )
    status = serializers.CharField(help_text="queued, running, done or failed")
    progress = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()
    result = serializers.JSONField(
        source="shown_result",
        allow_null=True,
        help_text="a label import: imported, rejected, errors (file:line: reason), ...; "
        "an agreement job: its report (null when withheld: see result_withheld)",
    )
    result_withheld = serializers.CharField(
        help_text="why `result` is null: an agreement result counts the round-1 labels of "
        'cards I annotate that are still in round 1 ("" when it is shown)'
    )
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, job):
        self.context["results"].shown([job])
        return super().to_representation(job)
