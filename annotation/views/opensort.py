"""The open sort's consolidation board (leads and experts), its freeze (leads) and the
provenance of the frozen types. The work is in annotation/opensort; these views check access
(opensort/access.get_study_for_board: the blind rule), call it and render."""

from __future__ import annotations

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..access import LEADS_ONLY, round1_hidden_from
from ..models import BoardType, FreeTag, Job, JobKind, Role, Study, Turn
from ..opensort import board as ops
from ..opensort import reading
from ..opensort.access import get_study_for_board, labels_open_to_lock, tags_open_to_lock
from ..opensort.board import BoardConflict, BoardError
from ..opensort.freeze import FreezeRefused, freeze, plan
from ..tasks import run_agreement

TYPE_FIELDS = ("name", "category", "definition", "example")


@login_required
@require_GET
def board(request: HttpRequest, slug: str) -> HttpResponse:
    """The board. Whoever may still change tag sets of their own (an annotator of an
    open-sorting group), or round-1 labels on the open sort's cards (after the freeze), is
    asked first: seeing the board locks them."""
    study = get_study_for_board(request.user, slug, record=False)
    if request.GET.get("confirm") != "1":
        tags = tags_open_to_lock(study, request.user)
        if tags or labels_open_to_lock(study, request.user):
            ctx = {"study": study, "tags": tags}
            return render(request, "annotation/opensort/board_confirm.html", ctx)
    get_study_for_board(request.user, slug)  # records the visit
    return render(request, "annotation/opensort/board.html", _context(request, study))


@login_required
@require_POST
def board_do(request: HttpRequest, slug: str) -> HttpResponse:
    """Every board operation: one POST, the `action` names it; htmx gets the board back."""
    study = get_study_for_board(request.user, slug)
    error, status, done = "", 200, None
    try:
        done = _do(study, request.user, request.POST)
    except BoardConflict as e:
        error, status = str(e), 409
    except BoardError as e:
        error, status = str(e), 422
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect("board", slug=study.slug)
    ctx = _context(request, study)
    ctx["error"] = error
    ctx["done"] = done
    return render(request, "annotation/opensort/board.html#board", ctx, status=status)


def _do(study: Study, user, post) -> str:
    action = post.get("action", "")
    if action == "rename_tag":
        event = ops.rename_tag(study, user, post.get("tag"), post.get("name", ""), post.get("was"))
    elif action == "merge":
        target = _tag_ref(study, post.get("target", ""))
        event = ops.merge_tags(study, user, post.getlist("tag"), target)
    elif action == "unmerge":
        event = ops.unmerge_tag(study, user, post.get("tag"))
    elif action == "set_type":
        event = ops.set_tag_type(study, user, post.get("tag"), post.get("type") or None)
    elif action == "create_type":
        values = {k: post.get(k, "") for k in TYPE_FIELDS}
        event = ops.create_type(study, user, **values)
    elif action == "update_type":
        values = {k: post.get(k) for k in TYPE_FIELDS}
        was = {k: post.get(f"was_{k}") for k in TYPE_FIELDS}
        event = ops.update_type(study, user, post.get("type"), was=was, **values)
    elif action == "delete_type":
        event = ops.delete_type(study, user, post.get("type"))
    elif action == "rename_category":
        event = ops.rename_category(study, user, post.get("old", ""), post.get("new", ""))
    elif action == "move_type":
        event = ops.move_type(study, user, post.get("type"), post.get("direction", ""))
    elif action == "undo":
        return "Undone: " + ops.undo(study, user, post.get("event")).summary
    elif action == "redo":
        return "Redone: " + ops.redo(study, user, post.get("event")).summary
    else:
        raise BoardError(f"Unknown board action {action!r}.")
    return event.summary


def _tag_ref(study: Study, text: str) -> int:
    """The tag a merge names: "label #12" (the page's list) or a unique label."""
    text = text.strip()
    found = re.search(r"#(\d+)\s*$", text)
    if found:
        return int(found.group(1))
    if not text:
        raise BoardError("Merge into: name the tag to merge into.")
    roots = FreeTag.objects.filter(study=study, merged_into__isnull=True)
    matches = [t for t in roots if (t.board_name or t.name).lower() == text.lower()]
    if len(matches) != 1:
        why = "no tag" if not matches else f"{len(matches)} tags"
        raise BoardError(f"Merge into {text!r}: {why} of that name; pick one from the list.")
    return matches[0].pk


def _context(request: HttpRequest, study: Study) -> dict:
    return {
        "study": study,
        "board": reading.load_board(study),
        "is_lead": study.role_of(request.user) == Role.LEAD,
    }


@login_required
@require_http_methods(["GET", "POST"])
def freeze_page(request: HttpRequest, slug: str) -> HttpResponse:
    """What the freeze will do, and the button that does it (leads only)."""
    study = get_study_for_board(request.user, slug)
    if study.role_of(request.user) != Role.LEAD:
        raise PermissionDenied(LEADS_ONLY)
    if request.method == "POST":
        try:
            result = freeze(study, request.user)
        except FreezeRefused as e:
            ctx = {"study": study, "plan": plan(study), "error": str(e)}
            return render(request, "annotation/opensort/freeze.html", ctx, status=409)
        job = _start_agreement(study, request.user)
        messages.success(
            request,
            f"Frozen into {result.version}: {result.annotations} tag sets became round-1 labels. "
            f"The agreement on the consolidated types is being computed (job {job.pk}).",
        )
        return redirect("provenance", slug=study.slug)
    return render(request, "annotation/opensort/freeze.html", {"study": study, "plan": plan(study)})


def _start_agreement(study: Study, user) -> Job:
    """The round-1 agreement on the frozen types, in the background like any agreement job."""
    with transaction.atomic():
        job = Job.objects.create(
            study=study,
            kind=JobKind.AGREEMENT,
            params={"round": 1, "seed": 0, "n_boot": 1000},
            created_by=user,
        )
        transaction.on_commit(lambda: run_agreement.delay(job.pk))
    return job


@login_required
@require_GET
def provenance(request: HttpRequest, slug: str) -> HttpResponse:
    """Each frozen type with the tags it came from and the cards they were used on; a card
    is listed only to whoever may see others' labels on it (access.round1_hidden_from)."""
    study = get_study_for_board(request.user, slug)
    hidden = set(round1_hidden_from(request.user, study).values_list("pk", flat=True))
    uses = reading.tag_uses(study)
    types = (
        BoardType.objects.filter(study=study, type__isnull=False)
        .select_related("type__axis__version__taxonomy", "type__category")
        .order_by("type__category__order", "type__order")
    )
    rows = []
    for bt in types:
        tags = reading.tags_of_type(study, bt)
        turn_ids = sorted({t for tag in tags for t in uses.get(tag.pk, set())})
        shown = [pk for pk in turn_ids if pk not in hidden]
        cards = Turn.objects.filter(pk__in=shown).select_related("conversation")
        rows.append(
            {
                "board_type": bt,
                "type": bt.type,
                "tags": [(tag, sorted(uses.get(tag.pk, set()))) for tag in tags],
                "cards": list(cards),
                "n_hidden": len(turn_ids) - len(shown),
            }
        )
    ctx = {"study": study, "rows": rows, "frozen": reading.frozen_event(study)}
    return render(request, "annotation/opensort/provenance.html", ctx)
