"""The lead's coding filter page (/s/SLUG/lead/filter/): the study's coding rules as a table
to edit (validated, every error naming the language and field), reset to the defaults, and
the filter over the study's current conversations (a job, tasks.run_filter_study: a dry run,
or setting aside the ones the rules drop, which *Bring back* undoes), and dry runs over files
before they are imported (the import form with "dry run" ticked, tasks.run_import). Every
view starts with get_study_for_lead (lead_page): a member who is not a lead gets a 403
"Leads only", anyone else a 404."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from ..access import JobResults, lead_page, lead_post
from ..importers import IMPORT_FORMATS
from ..intake.coding_filter import (
    DEFAULT_RULES,
    FIELDS,
    TIOBE_MONTH,
    default_rules,
    rules_for,
    validate_rules,
)
from ..intake.coding_report import bring_back_filtered
from ..jobs import enqueue
from ..models import Conversation, Job, JobKind, SetAside, Study
from ..tasks import reap_lost_jobs, run_filter_study

JOBS_SHOWN = 5
# what each list of the table means, for its column header
FIELD_LABELS = {
    "names": "Names",
    "abbreviations": "Abbreviations",
    "extensions": "File extensions",
    "exact_case": "Exact case only",
    "needs_context": "Need a code context",
    "stop_phrases": "Stop phrases",
}


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _join(values: list[str]) -> str:
    return ", ".join(values)


def rules_from_post(post) -> tuple[dict, list[str]]:
    """The rules the table's fields describe (rows lang-0 ... lang-N; an empty row or one
    ticked "remove" is left out) and the errors that make them unusable."""
    languages = []
    for i in range(int(post.get("rows", 0) or 0)):
        prefix = f"lang-{i}-"
        name = post.get(prefix + "language", "").strip()
        lists = {key: _split(post.get(prefix + key, "")) for key in FIELDS}
        if post.get(prefix + "remove") or not (name or any(lists.values())):
            continue
        languages.append({"language": name, **lists})
    rules = {
        "languages": languages,
        "context_words": _split(post.get("context_words", "")),
        "lead_words": _split(post.get("lead_words", "")),
    }
    errors = []
    try:
        rules["context_window"] = int(post.get("context_window", ""))
    except ValueError:
        rules["context_window"] = DEFAULT_RULES["context_window"]
        errors.append("context_window: must be a whole number of characters")
    return rules, errors + validate_rules(rules)


def _rows(rules: dict) -> list[dict]:
    rows = [
        {"language": entry["language"], "fields": [(k, _join(entry.get(k, []))) for k in FIELDS]}
        for entry in rules["languages"]
    ]
    rows.append({"language": "", "fields": [(k, "") for k in FIELDS], "new": True})
    return rows


def _filter_jobs(study: Study, user) -> list[Job]:
    reap_lost_jobs()
    jobs = study.jobs.filter(
        Q(kind=JobKind.FILTER) | Q(kind=JobKind.IMPORT, params__filter="coding")
    )
    return JobResults(user, study).shown(jobs.select_related("created_by")[:JOBS_SHOWN])


@lead_page
def rules_page(request: HttpRequest, study: Study) -> HttpResponse:
    rules, errors, status = rules_for(study), [], 200
    if request.method == "POST":
        if request.POST.get("action") == "reset":
            study.coding_rules = {}
            study.save(update_fields=["coding_rules"])
            messages.success(request, "The coding rules are the defaults again.")
            return redirect("lead_filter", study.slug)
        rules, errors = rules_from_post(request.POST)
        if not errors:
            # the defaults stay {} so that the page can say "the defaults"
            study.coding_rules = {} if rules == default_rules() else rules
            study.save(update_fields=["coding_rules"])
            messages.success(request, "Coding rules saved.")
            return redirect("lead_filter", study.slug)
        status = 422
    ctx = {
        "study": study,
        "rows": _rows(rules),
        "field_labels": FIELD_LABELS,
        "context_words": _join(rules.get("context_words", [])),
        "lead_words": _join(rules.get("lead_words", [])),
        "context_window": rules.get("context_window", DEFAULT_RULES["context_window"]),
        "errors": errors,
        "is_default": not study.coding_rules,
        "tiobe_month": TIOBE_MONTH,
        "jobs": _filter_jobs(study, request.user),
        "filtered": Conversation.objects.filter(study=study, set_aside=SetAside.FILTERED).count(),
        "formats": IMPORT_FORMATS,
    }
    return render(request, "annotation/lead/filter.html", ctx, status=status)


@lead_post
def dry_run(request: HttpRequest, study: Study) -> HttpResponse:
    """The coding filter over the study's current conversations, as a dry run: a job that
    reads only, and counts exactly what the real run would do."""
    enqueue(request.user, study, JobKind.FILTER, {"filter": "coding", "apply": False},
            run_filter_study)  # fmt: skip
    messages.success(request, "Dry run of the coding filter over the study's conversations queued.")
    return redirect("lead_filter", study.slug)


@lead_post
def apply(request: HttpRequest, study: Study) -> HttpResponse:
    """The coding filter over the study's current conversations, setting aside (reason
    `filtered`) the ones the rules drop: a job (`filter_study SLUG --filter coding`)."""
    enqueue(request.user, study, JobKind.FILTER, {"filter": "coding", "apply": True},
            run_filter_study)  # fmt: skip
    messages.success(
        request,
        "The coding filter over the study's conversations is queued: the ones it drops will "
        "be set aside (Bring back undoes it).",
    )
    return redirect("lead_filter", study.slug)


@lead_post
def bring_back(request: HttpRequest, study: Study) -> HttpResponse:
    """Every conversation the coding filter set aside back in the study's set."""
    n = bring_back_filtered(study)
    messages.success(
        request, f"{n} conversation(s) the coding filter set aside are back in the set."
    )
    return redirect("lead_filter", study.slug)
