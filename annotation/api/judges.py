"""The study's machine judges through the API (issue 22, point 4): the judge runs, and a new
one (a dry run's estimate, or a run started as a background JUDGE job), through the same
domain functions as `manage.py run_judge` and the report page's panel (actions/judges.py).
Leads only, and not while the agreement lock applies to them (access.get_study_for_judges's
rule): anyone else gets a 404 (a member who is not a lead) or the lock's 403."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ..access import agreement_locked_reason, get_study_for_lead
from ..actions.judges import JudgeRefused, RunRequest, prepare, settle_lost, start
from ..tasks import reap_lost_jobs, run_judge
from .common import (
    ClosedSerializer,
    PageQuerySerializer,
    StrictBooleanField,
    StrictIntegerField,
    TextField,
    job_url,
    page_of,
    paginate,
    responses,
)
from .parsers import JSONBodyParser

BIG = 2**31 - 1


class JudgeRunInputSerializer(ClosedSerializer):
    judge = TextField(
        max_length=100,
        help_text="llm-annotate, llm-extract, llm-validate or a detector's name",
    )
    group = TextField(required=False, max_length=100, help_text="default: the study's only group")
    units = serializers.ChoiceField(required=False, choices=["cards", "episodes"])
    conversations = serializers.ListField(
        child=TextField(max_length=255), required=False, max_length=100_000,
        help_text="external ids of the group's conversations to judge",
    )  # fmt: skip
    sample = StrictIntegerField(required=False, min_value=1, max_value=BIG)
    seed = StrictIntegerField(required=False, min_value=0, max_value=BIG)
    model = TextField(required=False, max_length=200)
    temperature = serializers.FloatField(required=False, min_value=0, max_value=2)
    max_calls = StrictIntegerField(required=False, min_value=1, max_value=BIG)
    max_tokens = StrictIntegerField(required=False, min_value=1, max_value=BIG)
    threshold = serializers.FloatField(required=False, min_value=0, max_value=1)
    run = TextField(
        required=False, max_length=100,
        help_text="an extraction run: llm-extract's to write, llm-validate's to judge, "
        "llm-annotate on episodes' to label",
    )  # fmt: skip
    min_confidence = serializers.FloatField(
        required=False, min_value=0, max_value=1, help_text="llm-extract: drop episodes under it"
    )
    dry_run = StrictBooleanField(required=False, help_text="estimate only: nothing is called")


class JudgeRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.CharField()
    version = serializers.CharField()
    judge_user = serializers.CharField(source="user.username")
    group = serializers.CharField(source="group.name", allow_null=True)
    units = serializers.CharField()
    model = serializers.CharField()
    prompt_digest = serializers.CharField()
    params = serializers.JSONField()
    threshold = serializers.FloatField()
    status = serializers.CharField(help_text="planned, running, done, stopped or failed")
    counts = serializers.JSONField(help_text="estimate, units_total, units_done, labelled, ...")
    calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    job = serializers.IntegerField(source="job_id", allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class JudgeRunStartedSerializer(serializers.Serializer):
    run = JudgeRunSerializer()
    status_url = serializers.CharField(
        allow_null=True, help_text="the job's status (null for a dry run)"
    )


def _study(request: Request, slug: str):
    study = get_study_for_lead(request.user, slug)
    if locked := agreement_locked_reason(request.user, study):
        raise PermissionDenied(locked)
    return study


@extend_schema(
    methods=["GET"],
    operation_id="studies_judge_runs_list",
    parameters=[PageQuerySerializer],
    responses=responses({200: page_of(JudgeRunSerializer)}, 400, 403, 404),
)
@extend_schema(
    methods=["POST"],
    operation_id="studies_judge_runs_create",
    request=JudgeRunInputSerializer,
    responses=responses(
        {201: JudgeRunStartedSerializer, 202: JudgeRunStartedSerializer}, 400, 403, 404
    ),
)
@api_view(["GET", "POST"])
@parser_classes([JSONBodyParser])
def judge_runs(request: Request, slug: str) -> Response:
    """Leads only: GET the study's judge runs, newest first; POST a run (`dry_run`: its
    estimate of calls and tokens saved as a planned run, 201; else started as a job, 202,
    follow it at `status_url`)."""
    study = _study(request, slug)
    if request.method == "GET":
        reap_lost_jobs()
        settle_lost(study)
        rows = study.judge_runs.select_related("group", "user")
        return paginate(request, rows, JudgeRunSerializer)
    serializer = JudgeRunInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = dict(serializer.validated_data)
    dry_run = data.pop("dry_run", False)
    try:
        run = prepare(study, RunRequest(**data), by=request.user)
    except JudgeRefused as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    if dry_run:
        body = {"run": run, "status_url": None}
        return Response(JudgeRunStartedSerializer(body).data, status=status.HTTP_201_CREATED)
    job = start(run, run_judge, by=request.user)
    run.refresh_from_db()
    body = {"run": run, "status_url": job_url(request, job)}
    return Response(JudgeRunStartedSerializer(body).data, status=status.HTTP_202_ACCEPTED)
