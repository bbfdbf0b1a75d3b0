"""Shared set-up of the open-sort tests: a study whose group of two experts open-sorts, and
the card's POST as the tag panel sends it."""

from __future__ import annotations

from annotation.models import Kind, Phase, Study
from tests.factories import HTMX, make_conversation, make_group, study_url


def open_sort_group(study: Study, annotators, name: str = "experts", *, by_study: bool = True):
    """A group of experts in the open sort: the study's phase (`by_study`), or the group's own."""
    if by_study:
        Study.objects.filter(pk=study.pk).update(phase=Phase.OPEN_SORT)
        study.phase = Phase.OPEN_SORT
    group = make_group(study, name, annotators, kind=Kind.EXPERT)
    if not by_study:
        group.phase = Phase.OPEN_SORT
        group.save(update_fields=["phase"])
    return group


def cards_of(study: Study, group, external_id: str = "c1", n: int = 3) -> list:
    return list(
        make_conversation(study, external_id, n_turns=n, group=group).turns.order_by("index")
    )


def post_tags(client, turn, *tags, no_smell=False, note="", new=None, htmx=True, slug="s1"):
    """The card's submit from the tag panel: `tags` are chips (names, or (name, description)
    pairs), `new` the (name, description) still typed in the box."""
    data: dict = {"tag": [], "tag_description": [], "note": note}
    for tag in tags:
        name, description = tag if isinstance(tag, tuple) else (tag, "")
        data["tag"].append(name)
        data["tag_description"].append(description)
    if new is not None:
        data["new_tag"], data["new_description"] = new
    if no_smell:
        data["no_smell"] = "1"
    headers = HTMX if htmx else {}
    return client.post(study_url("card", turn, slug=slug), data, **headers)
