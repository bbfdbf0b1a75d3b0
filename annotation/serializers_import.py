"""Serializers of the label-import endpoint and of a job's status (annotation/api.py)."""

from __future__ import annotations

from rest_framework import serializers


class LabelImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSONL of annotations, one record a line")
    create_members = serializers.BooleanField(
        required=False,
        default=False,
        help_text="create unknown annotators and groups, and seat annotators in the group",
    )
    judge = serializers.BooleanField(
        required=False,
        default=False,
        help_text="a reference annotator's round-1 labels: compared, never voting",
    )


class JobStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField(source="pk")
    status = serializers.CharField()
    status_url = serializers.CharField(help_text="GET it for the job's status and result")


class JobStatusSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField(help_text="queued, running, done or failed")
    progress = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()
    result = serializers.JSONField(
        help_text="a label import: imported, rejected, errors (file:line: reason), ..."
    )
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
