"""The API's label import (a background job, as on the lead's import page) and the status of
a job. Leads only, as on the pages: anyone else gets a 404 (annotation/access.py). Kept out
of api.py so the endpoints about cards and labels stay in one place and these in another."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from .access import get_study_for_lead
from .models import Job
from .serializers_import import (
    JobStartedSerializer,
    JobStatusSerializer,
    LabelImportInputSerializer,
)
from .views_lead import start_label_import

NOT_LEAD = OpenApiResponse(description="No such study or job, or you are not one of its leads")


@extend_schema(
    operation_id="studies_annotations_import_create",
    request={"multipart/form-data": LabelImportInputSerializer},
    responses={
        202: JobStartedSerializer,
        400: OpenApiResponse(description="No file, or a flag that is not a boolean"),
        404: NOT_LEAD,
    },
)
@api_view(["POST"])
@parser_classes([MultiPartParser])
def import_annotations(request: Request, slug: str) -> Response:
    """Leads only: import a JSONL file of annotations as a background job, exactly as
    `manage.py import_annotations` does (everyone the file names is seated first, then the
    labels go through the rounds). Follow the job at `status_url`."""
    study = get_study_for_lead(request.user, slug)
    serializer = LabelImportInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    job = start_label_import(
        study,
        request.user,
        data["file"],
        create_members=data["create_members"],
        judge=data["judge"],
    )
    job.status_url = reverse("api-job", args=[study.slug, job.pk], request=request)
    return Response(JobStartedSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    operation_id="studies_jobs_retrieve",
    responses={200: JobStatusSerializer, 404: NOT_LEAD},
)
@api_view(["GET"])
def job(request: Request, slug: str, job_id: int) -> Response:
    """Leads only: a job's status, progress and result (a label import's per-record errors
    included). A job whose worker was killed reads as failed, as on the pages."""
    study = get_study_for_lead(request.user, slug)
    Job.objects.reap_lost()
    found = get_object_or_404(Job, pk=job_id, study=study)
    return Response(JobStatusSerializer(found).data)
