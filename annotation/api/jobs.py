"""The study's background jobs through the API, leads only as on the pages (anyone else gets
a 404): the list, one job's status, the label import and the export (the same jobs the
lead's pages start, through the same functions), and an export's file (or an import's
rejected records), with the same rule as the page's download (exports.may_download: a lead
who annotates gets only a file made blind for them). A job's result goes through
access.JobResults, as on the pages: an agreement result is null for a lead the agreement
lock applies to, and `result_withheld` says why (the agreement endpoint's 403 reason)."""

from __future__ import annotations

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from ..access import JobResults, get_study_for_lead
from ..exports import is_raw, may_download
from ..jobs import NOT_BLIND_FOR_YOU, enqueue, open_result, start_label_import
from ..models import Job, JobKind, JobStatus
from ..tasks import reap_lost_jobs, run_export
from ..uploads import too_large
from .common import job_url, page_of, paginate, read_query, responses
from .outputs import ExportInputSerializer, JobsQuerySerializer
from .parsers import JSONBodyParser
from .serializers import JobStartedSerializer, JobStatusSerializer, LabelImportInputSerializer

# the media type of a downloaded file, by its extension (the file is sent as it was written)
MEDIA_TYPES = {
    "csv": "text/csv",
    "jsonl": "application/jsonl",
    "parquet": "application/vnd.apache.parquet",
    "txt": "text/plain",
}


@extend_schema(
    operation_id="studies_jobs_list",
    parameters=[JobsQuerySerializer],
    responses=responses({200: page_of(JobStatusSerializer)}, 400, 404),
)
@api_view(["GET"])
def jobs(request: Request, slug: str) -> Response:
    """Leads only: the study's jobs, newest first (lost ones reaped first, as on the pages)."""
    study = get_study_for_lead(request.user, slug)
    query = read_query(request, JobsQuerySerializer)
    reap_lost_jobs()
    rows = study.jobs.filter(**{k: v for k, v in query.items() if k in ("kind", "status")})
    results = JobResults(request.user, study)
    return paginate(
        request, rows.order_by("-created_at", "-id"), JobStatusSerializer, results=results
    )


@extend_schema(
    operation_id="studies_jobs_retrieve",
    responses=responses({200: JobStatusSerializer}, 404),
)
@api_view(["GET"])
def job(request: Request, slug: str, job_id: int) -> Response:
    """Leads only: a job's status, progress and result (a label import's per-record errors
    included; an agreement result withheld while I annotate cards still in round 1, and
    `result_withheld` says why). A job whose worker was killed reads as failed, as on the
    pages."""
    study = get_study_for_lead(request.user, slug)
    reap_lost_jobs()
    found = get_object_or_404(Job, pk=job_id, study=study)
    results = JobResults(request.user, study)
    return Response(JobStatusSerializer(found, context={"results": results}).data)


@extend_schema(
    operation_id="studies_annotations_import_create",
    request={"multipart/form-data": LabelImportInputSerializer},
    responses=responses({202: JobStartedSerializer}, 400, 404),
)
@api_view(["POST"])
@parser_classes([MultiPartParser])
def import_annotations(request: Request, slug: str) -> Response:
    """Leads only: import a JSONL file of annotations as a background job, exactly as
    `manage.py import_annotations` does (everyone the file names is seated first, then the
    labels go through the rounds). Follow the job at `status_url`."""
    study = get_study_for_lead(request.user, slug)
    if error := too_large(request):  # a file over CARDSORT_UPLOAD_MAX_MB was left unread
        raise ValidationError({"file": [error]})
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
    job.status_url = job_url(request, job)
    return Response(JobStartedSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    operation_id="studies_exports_create",
    request=ExportInputSerializer,
    responses=responses({202: JobStartedSerializer}, 400, 404),
)
@api_view(["POST"])
@parser_classes([JSONBodyParser])
def start_export(request: Request, slug: str) -> Response:
    """Leads only: start the export job the study page starts (gold labels, or every raw
    label with `raw`), made blind for me if I annotate. Download its file from
    `.../jobs/ID/download/` once done."""
    study = get_study_for_lead(request.user, slug)
    serializer = ExportInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    params = dict(serializer.validated_data)
    params["raw"] = is_raw(params["unit"], params["raw"])
    params["round"] = None if params["raw"] else 1  # as the page's start_export
    job = enqueue(request.user, study, JobKind.EXPORT, params, run_export)
    job.status_url = job_url(request, job)
    return Response(JobStartedSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    operation_id="studies_jobs_download_retrieve",
    responses=responses(
        {
            (200, media): OpenApiResponse(OpenApiTypes.BINARY, description="the file")
            for media in MEDIA_TYPES.values()
        },
        403,
        404,
    ),
)
@api_view(["GET"])
def download(request: Request, slug: str, job_id: int) -> FileResponse:
    """Leads only: a finished export's file, or a label import's rejected records. A lead
    who annotates gets only an export made blind for them (403 otherwise)."""
    study = get_study_for_lead(request.user, slug)
    found = get_object_or_404(Job, pk=job_id, study=study)
    if withheld := JobResults(request.user, study).withheld(found):
        raise PermissionDenied(withheld)
    if found.kind == JobKind.IMPORT and found.result_file:
        name = f"{study.slug}-import-{found.pk}-rejected.txt"
    elif found.kind == JobKind.EXPORT and found.status == JobStatus.DONE and found.result_file:
        if not may_download(request.user, study, found.result):
            raise PermissionDenied(NOT_BLIND_FOR_YOU)
        name = None
    else:
        raise NotFound("This job has no file to download")
    stored, stored_name = open_result(found)
    name = name or stored_name
    response = FileResponse(stored, as_attachment=True, filename=name)
    response["Content-Type"] = MEDIA_TYPES.get(name.rsplit(".", 1)[-1], "text/plain")
    return response
