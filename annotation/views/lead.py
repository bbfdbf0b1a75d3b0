"""The lead's pages: conversations and their import, groups, assignment. Every view starts
with get_study_for_lead, so a non-lead gets a 404 on pages, partials and POSTs alike."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from ..access import lead_page, lead_post
from ..accounts.seats import seat_annotator, set_moderator, unseat_annotator
from ..actions.assign import AssignRefused, assign_as_asked
from ..actions.groups import GroupRefused, create_group
from ..forms import AssignForm, GroupForm, form_errors
from ..importers import IMPORT_FORMATS, modality
from ..jobs import save_uploads, start_label_import
from ..models import (
    Conversation,
    Group,
    Job,
    JobKind,
    SeatRefused,
    Study,
    study_conversation_counts,
)
from ..storage import IMPORTS, job_name
from ..tasks import run_import
from ..uploads import too_large
from .shared.groups import group_response, groups_with_counts
from .shared.jobs_panel import recent_jobs

CONVERSATIONS_PER_PAGE = 50
NO_FILES = "Choose one or more files, or a folder, to import."


# -- conversations and import ---------------------------------------------------------------


def _conversation_counts(study: Study) -> dict:
    # the kept figures (models/figures.py): one row, whatever the study's size
    return study_conversation_counts(study)


@lead_page
def conversations(request: HttpRequest, study: Study) -> HttpResponse:
    if request.htmx and request.GET.get("partial") == "counts":
        ctx = {"study": study, "counts": _conversation_counts(study)}
        return render(request, "annotation/lead/conversations.html#counts", ctx)
    rows = (
        Conversation.objects.filter(study=study)
        .visible()
        .prefetch_related(Prefetch("groups", queryset=Group.objects.order_by("name")))
        .order_by("id")
    )
    only_unassigned = request.GET.get("show") == "unassigned"
    if only_unassigned:
        rows = rows.unassigned()
    counts = _conversation_counts(study)
    paginator = Paginator(rows, CONVERSATIONS_PER_PAGE)
    # the page count from the kept figures, not a count of the study's conversations
    paginator.count = counts["unassigned" if only_unassigned else "conversations"]
    ctx = {
        "study": study,
        "counts": counts,
        "jobs": recent_jobs(study, request.user, [JobKind.IMPORT, JobKind.LABEL_IMPORT]),
        "page": paginator.get_page(request.GET.get("page")),
        "only_unassigned": only_unassigned,
        "groups": study.groups.all(),
        "formats": IMPORT_FORMATS,
    }
    return render(request, "annotation/lead/conversations.html", ctx)


@lead_post
def import_conversations(request: HttpRequest, study: Study) -> HttpResponse:
    uploads = request.FILES.getlist("files")
    # a chosen folder's files (webkitdirectory): the browser sends hidden ones too
    in_folder = [u for u in request.FILES.getlist("folder") if not u.name.startswith(".")]
    fmt = request.POST.get("format", "auto")
    # "coding": keep only the conversations the study's coding rules match (lead/filter/)
    kept = request.POST.get("filter", "")
    # the coding filter page sends its dry runs of files here too, and wants its page back
    back = "lead_filter" if request.POST.get("back") == "filter" else "lead_conversations"
    error = ""
    if not (uploads or in_folder):
        error = NO_FILES
    elif fmt not in IMPORT_FORMATS:
        error = f"Unknown format {fmt!r}."
    elif kept not in ("", "coding"):
        error = f"Unknown filter {kept!r}."
    try:  # where the sessions ran, for the whole import (importers/modality.py)
        given = modality.overrides(request.POST.get("modality"), request.POST.get("tool"))
    except ValueError as exc:
        error = error or f"Modality: {exc}."
    # a file over the size limit was left out: nothing of the lot is imported
    error = too_large(request) or error
    if error:
        messages.error(request, error)
        return redirect(back, study.slug)
    params = {"format": fmt, "filter": kept, "dry_run": bool(request.POST.get("dry_run"))}
    params.update(given)
    with transaction.atomic():
        job = Job.objects.create(
            study=study, kind=JobKind.IMPORT, created_by=request.user, params=params
        )
        job.params["files"] = save_uploads(job, uploads)
        if in_folder:
            # imported as a folder: files of no known format are skipped, not errors
            job.params["folder"] = {
                "path": job_name(IMPORTS, job.pk, "folder"),
                "files": save_uploads(job, in_folder, under="folder"),
            }
        job.save(update_fields=["params"])
        transaction.on_commit(lambda: run_import.delay(job.pk))
    what = "Dry run" if params["dry_run"] else "Import"
    messages.success(request, f"{what} of {len(uploads) + len(in_folder)} file(s) queued.")
    return redirect(back, study.slug)


@lead_post
def import_annotations(request: HttpRequest, study: Study) -> HttpResponse:
    upload = request.FILES.get("file")
    if error := too_large(request):
        messages.error(request, error)
        return redirect("lead_conversations", study.slug)
    if upload is None:
        messages.error(request, "Choose a JSONL file of annotations to import.")
        return redirect("lead_conversations", study.slug)
    start_label_import(
        study,
        request.user,
        upload,
        create_members=bool(request.POST.get("create_members")),
        judge=bool(request.POST.get("judge")),
    )
    messages.success(request, f"Import of the annotations in {upload.name} queued.")
    return redirect("lead_conversations", study.slug)


# -- assignment -----------------------------------------------------------------------------


def _ids(conversations) -> list[int]:
    return list(conversations.values_list("pk", flat=True))


@lead_post
def assign(request: HttpRequest, study: Study) -> HttpResponse:
    form = AssignForm(study, request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing assigned: {form_errors(form)}")
        return redirect("lead_conversations", study.slug)
    data = form.cleaned_data
    groups = list(data["group"].order_by("name"))
    ids = _ids(data["conversation"]) if data["how"] != "count" else []
    try:
        result = assign_as_asked(
            request.user,
            study,
            groups,
            data["how"],
            count=data["count"],
            seed=data["seed"],
            conversations=ids,
        )
    except AssignRefused as e:
        messages.error(request, str(e))
    else:
        ok = result.done > 0 or data["how"] == "count"
        (messages.success if ok else messages.error)(request, result.message)
    return redirect("lead_conversations", study.slug)


# -- groups ---------------------------------------------------------------------------------


@lead_page
def groups(request: HttpRequest, study: Study) -> HttpResponse:
    form = GroupForm(request.POST or None, instance=Group(study=study))
    if request.method == "POST" and form.is_valid():
        try:
            group = create_group(study, form.cleaned_data["name"], form.cleaned_data["kind"])
        except GroupRefused as e:
            form.add_error("name", str(e))
        else:
            messages.success(request, f"Group {group} created.")
            return redirect("lead_groups", study.slug)
    ctx = {"study": study, "groups": groups_with_counts(study), "form": form}
    return render(request, "annotation/lead/groups.html", ctx)


def _find_user(username: str):
    user = get_user_model().objects.filter(username=username).first()
    error = "" if user else f"No user named {username!r}: create the account first."
    return user, error


@lead_post
def group_members(request: HttpRequest, study: Study, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id, study=study)
    user, error = _find_user(request.POST.get("username", "").strip())
    if user is not None:
        # the round rules: an annotator who has labelled one of its cards stays in the group
        change = unseat_annotator if request.POST.get("action") == "remove" else seat_annotator
        error = _refusal(change, group, user)
    return group_response(request, study, group, error)


def _refusal(change, *args) -> str:
    """A seat change (accounts/seats.py), its refusal as the page's error message."""
    try:
        change(*args)
    except SeatRefused as e:
        return str(e)
    return ""


@lead_post
def group_moderator(request: HttpRequest, study: Study, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id, study=study)
    username = request.POST.get("username", "").strip()
    user, error = _find_user(username) if username else (None, "")
    if user is not None or not error:
        # the moderator it replaces, left with no seat, is an annotator again (seats.py)
        error = _refusal(set_moderator, group, user)
    return group_response(request, study, group, error)
