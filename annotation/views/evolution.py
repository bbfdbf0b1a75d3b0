"""Taxonomy evolution pages (annotation/evolution/ does the work).

- The taxonomy page (leads and experts): the study's version, a form to make the next one
  (rename, merge, split, add), and the history of moves. Posting the form shows a
  confirmation of what changes (types and rows); only confirming (confirm=1) creates the
  version and moves the labels.
- The "Taxonomy changes" page (every annotator): their own labels waiting for a side of a
  split type, a small form each. Nobody sees another's labels there.
"""

from __future__ import annotations

import json
from string import ascii_uppercase

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from taxonomy.models import Category

from ..access import get_study_for_expert, get_study_for_user
from ..evolution import (
    EvolutionError,
    answer_split,
    describe_changes,
    evolve,
    pending_in,
    pending_labels,
    preview,
    split_questions,
)
from ..jsondepth import too_deep
from ..models import Annotation, Study, TaxonomyMove

MERGE_GROUPS = ascii_uppercase[:4]
ADD_ROWS = 3
PAGE = "annotation/evolution/taxonomy.html"
CONFIRM = "annotation/evolution/confirm.html"
QUEUE = "annotation/evolution/split_queue.html"


@login_required
@require_GET
def taxonomy(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_expert(request.user, slug)
    return render(request, PAGE, _page_context(study, {}))


@login_required
@require_POST
def taxonomy_preview(request: HttpRequest, slug: str) -> HttpResponse:
    """The form's changes as a confirmation: what the new version changes and how many
    labels move. Nothing is written."""
    study = get_study_for_expert(request.user, slug)
    spec, errors = spec_from_post(study, request.POST)
    if not errors and not any(spec.values()):
        errors = ["No change asked for: rename, merge, split or add a type first."]
    if not errors:
        try:
            said = preview(study, spec)
        except EvolutionError as e:
            errors = [str(e)]
    if errors:
        return render(request, PAGE, _page_context(study, request.POST, errors), status=422)
    return render(request, CONFIRM, _confirm_context(study, spec, said))


@login_required
@require_POST
def taxonomy_confirm(request: HttpRequest, slug: str) -> HttpResponse:
    """With confirm=1, the spec of the confirmation page: the version is made and the study
    moves to it. Without confirm=1 nothing changes (the confirmation again, 422)."""
    study = get_study_for_expert(request.user, slug)
    try:
        spec = _spec_json(request.POST.get("spec", ""))
        expected = int(request.POST.get("from_version", ""))
    except ValueError:
        return render(request, PAGE, _page_context(study, {}, [BAD_SPEC]), status=422)
    try:
        if request.POST.get("confirm") != "1":
            raise EvolutionError("Not confirmed: nothing was changed.")
        move = evolve(study, spec, request.user, expected_version=expected)
    except EvolutionError as e:
        try:
            said = preview(study, spec)
        except EvolutionError:
            return render(request, PAGE, _page_context(study, {}, [str(e)]), status=422)
        ctx = {**_confirm_context(study, spec, said), "error": str(e)}
        return render(request, CONFIRM, ctx, status=422)
    messages.success(request, _moved_message(move))
    return redirect("taxonomy", slug=study.slug)


BAD_SPEC = "The confirmation form was damaged (its changes could not be read): nothing was changed."


SPEC_SHAPE = {"add": list, "rename": dict, "merge": list, "split": list}


def _spec_json(text: str) -> dict:
    """The confirmation's changes, read back; a damaged one is a ValueError."""
    if too_deep(text):  # json would recurse into a RecursionError
        raise ValueError("nested too deep")
    spec = json.loads(text or "null")
    if not isinstance(spec, dict) or any(
        key not in SPEC_SHAPE or not isinstance(value, SPEC_SHAPE[key])
        for key, value in spec.items()
    ):
        raise ValueError("not a change spec")
    items = [*spec.get("add", []), *spec.get("merge", []), *spec.get("split", [])]
    if not all(isinstance(item, dict) for item in items):
        raise ValueError("not a change spec")
    return spec


def _moved_message(move: TaxonomyMove) -> str:
    c = move.counts
    text = (
        f"The study moved to {move.to_version}: {c['annotations']} annotations and "
        f"{c['consensus']} consensus labels carried."
    )
    if c["annotations_pending"]:
        text += (
            f" {c['annotations_pending']} labels on {c['cards_queued']} cards wait for their "
            "annotators to choose a side of a split type (their Taxonomy changes page)."
        )
    if c.get("disputes_dissolved"):
        text += (
            f" {c['disputes_dissolved']} disputed cards differed only on merged types: "
            "they are agreed now."
        )
    if c["consensus_to_moderator"]:
        text += (
            f" {c['consensus_to_moderator']} consensus labels had a split type: those cards "
            "went to their group's moderator."
        )
    return text


def _page_context(study: Study, posted, errors: list[str] | None = None) -> dict:
    types = study.taxonomy_version.type_list()
    rows = [
        {
            "type": t,
            "name": posted.get(f"name-{t.code}", t.name),
            "merge": posted.get(f"merge-{t.code}", ""),
            "split": posted.get(f"split-{t.code}", ""),
        }
        for t in types
    ]
    groups = [
        {
            "key": g,
            "keep": posted.get(f"merge-keep-{g}", ""),
            "name": posted.get(f"merge-name-{g}", ""),
            "definition": posted.get(f"merge-definition-{g}", ""),
        }
        for g in MERGE_GROUPS
    ]
    categories = [
        (f"{c.axis.code}|{c.name}", f"{c.axis.name}: {c.name}" if c.axis else c.name)
        for c in _categories(study)
    ]
    adds = [
        {
            "i": i,
            "name": posted.get(f"add-name-{i}", ""),
            "definition": posted.get(f"add-definition-{i}", ""),
            "category": posted.get(f"add-category-{i}", ""),
        }
        for i in range(1, ADD_ROWS + 1)
    ]
    moves = study.taxonomy_moves.select_related("from_version", "to_version", "moved_by")
    return {
        "study": study,
        "rows": rows,
        "groups": groups,
        "categories": categories,
        "adds": adds,
        "errors": errors or [],
        "moves": list(moves),
        "changes": describe_changes(study.taxonomy_version),
        "pending": pending_in(study).count(),
    }


def _categories(study: Study):
    return Category.objects.filter(axis__version_id=study.taxonomy_version_id).select_related(
        "axis"
    )


def _confirm_context(study: Study, spec: dict, said: dict) -> dict:
    return {
        "study": study,
        "said": said,
        "spec": json.dumps(spec),
        "from_version": study.taxonomy_version_id,
        "error": "",
    }


def spec_from_post(study: Study, post) -> tuple[dict, list[str]]:
    """The taxonomy form as derive's changes, and what is wrong with it (each message names
    the type or the row). Per type: `name-<code>` (a rename), `merge-<code>` (a merge
    group A-D), `split-<code>` (the new types, one a line: "Name: definition"). Per merge
    group: `merge-keep-<G>` (the code that stays) or `merge-name-<G>` (a new type's name),
    `merge-definition-<G>`. Per added type: `add-name-<i>`, `add-definition-<i>`,
    `add-category-<i>` ("axis code|category name")."""
    types = study.taxonomy_version.type_list()
    errors: list[str] = []
    rename, split, members = _type_changes(types, post, errors)
    merge = _merges(types, members, post, errors)
    spec = {"add": _adds(post), "rename": rename, "merge": merge, "split": split}
    return spec, errors


def _type_changes(types, post, errors: list[str]) -> tuple[dict, list, dict[str, list[str]]]:
    """The per-type fields: renames, splits, and the codes in each merge group."""
    rename, split = {}, []
    members: dict[str, list[str]] = {g: [] for g in MERGE_GROUPS}
    for t in types:
        name = (post.get(f"name-{t.code}") or "").strip()
        if f"name-{t.code}" in post and not name:
            errors.append(f"“{t.name}”: a type needs a name (leave it as it is to keep it).")
        elif name and name != t.name:
            rename[t.code] = name
        group = post.get(f"merge-{t.code}", "")
        if group:
            if group not in members:
                errors.append(f"“{t.name}”: no merge group {group!r}.")
            else:
                members[group].append(t.code)
        lines = [line.strip() for line in (post.get(f"split-{t.code}") or "").splitlines()]
        parts = [_part(line) for line in lines if line]
        if len(parts) == 1:
            errors.append(
                f"Split of “{t.name}”: give at least two new types, one a line "
                "(“Name: definition”)."
            )
        elif parts:
            split.append({"code": t.code, "into": parts})
    return rename, split, members


def _merges(types, members: dict[str, list[str]], post, errors: list[str]) -> list[dict]:
    """Each merge group with two types or more, into the type kept or a new one."""
    merge = []
    by_code = {t.code: t for t in types}
    for g, codes in members.items():
        keep = post.get(f"merge-keep-{g}", "")
        name = (post.get(f"merge-name-{g}") or "").strip()
        definition = (post.get(f"merge-definition-{g}") or "").strip()
        if not codes:
            if keep or name:
                errors.append(f"Merge {g}: no type is in this merge (choose {g} on the types).")
            continue
        if len(codes) < 2:
            errors.append(f"Merge {g}: a merge takes at least two types; only one has {g}.")
            continue
        if keep and name:
            errors.append(f"Merge {g}: keep an existing type or name a new one, not both.")
            continue
        if keep:
            if keep not in codes:
                errors.append(f"Merge {g}: the type kept must be one of the merge's types.")
                continue
            merge.append({"into": keep, "from": codes})
            if definition:
                errors.append(
                    f"Merge {g}: a kept type keeps its definition; rename it above, or merge "
                    "into a new type to give one."
                )
        elif name:
            merge.append({"into": name, "from": codes, "definition": definition})
        else:
            names = ", ".join(by_code[c].name for c in codes)
            errors.append(f"Merge {g} ({names}): choose the type kept, or name the new type.")
    return merge


def _adds(post) -> list[dict]:
    add = []
    for i in range(1, ADD_ROWS + 1):
        name = (post.get(f"add-name-{i}") or "").strip()
        if not name:
            continue
        axis, _, category = (post.get(f"add-category-{i}") or "").partition("|")
        add.append(
            {
                "name": name,
                "definition": (post.get(f"add-definition-{i}") or "").strip(),
                "axis": axis or None,
                "category": category or None,
            }
        )
    return add


def _part(line: str) -> dict:
    name, _, definition = line.partition(":")
    return {"name": name.strip(), "definition": definition.strip()}


# -- the annotators' side ----------------------------------------------------------------------


@login_required
@require_GET
def split_queue(request: HttpRequest, slug: str) -> HttpResponse:
    study, _ = get_study_for_user(request.user, slug)
    return render(request, QUEUE, _queue_context(study, request.user))


@login_required
@require_POST
def split_answer(request: HttpRequest, slug: str, annotation_id: int) -> HttpResponse:
    """The annotator's side(s) of each split type of one of their waiting labels: fields
    `side-<old code>`, one or more part codes each. Someone else's label is a 404."""
    study, _ = get_study_for_user(request.user, slug)
    row = get_object_or_404(
        Annotation.objects.select_related("turn__conversation", "taxonomy_version"),
        pk=annotation_id,
        annotator=request.user,
        turn__conversation__study=study,
    )
    chosen = {
        key.removeprefix("side-"): request.POST.getlist(key)
        for key in request.POST
        if key.startswith("side-")
    }
    try:
        answer_split(row, request.user, chosen)
    except EvolutionError as e:
        ctx = _queue_context(study, request.user)
        mine = [item for item in ctx["items"] if item["row"].pk == row.pk]
        if not mine:  # answered already, or revised on the card: nothing to show it on
            messages.error(request, str(e))
            return redirect("split_queue", slug=study.slug)
        mine[0]["error"] = str(e)
        mine[0]["chosen"] = {c for codes in chosen.values() for c in codes}
        return render(request, QUEUE, ctx, status=422)
    messages.success(request, f"Saved your answer for card {row.turn}.", extra_tags="saved")
    return redirect("split_queue", slug=study.slug)


def _queue_context(study: Study, user) -> dict:
    items = [
        {"row": row, "questions": split_questions(row), "error": "", "chosen": set()}
        for row in pending_labels(user, study)
    ]
    return {"study": study, "items": items}
