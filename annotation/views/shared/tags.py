"""The open sort's card submit (the card view answers it, annotate.card): the posted tag
panel, saved through annotation/opensort/tagging.py, and what was saved in words."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest, QueryDict
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ...conversation_keys import shortened
from ...models import Group, Turn
from ...opensort import tagging
from ...opensort.tagging import TagInput


@dataclass
class PostedTags:
    """The tag panel as posted: the chosen tags (hidden inputs `tag` and, beside each,
    `tag_description`), the tag still in the box (`new_tag`, `new_description`: a submit
    keeps what was typed), "no smell" and the note."""

    tags: list[TagInput] = field(default_factory=list)
    no_smell: bool = False
    note: str = ""

    @classmethod
    def read(cls, data: QueryDict) -> PostedTags:
        names = data.getlist("tag")
        descriptions = data.getlist("tag_description")
        descriptions += [""] * (len(names) - len(descriptions))
        tags = [TagInput(n, d) for n, d in zip(names, descriptions, strict=False)]
        typed = data.get("new_tag", "")
        if typed.strip():
            tags.append(TagInput(typed, data.get("new_description", "")))
        return cls(tags=tags, no_smell=bool(data.get("no_smell")), note=data.get("note", ""))


def tags_saved(slug: str, turn: Turn, tag_set) -> SafeString:
    """ "Saved your tags: vague goal, no tests on conv-7 turn 3." with a link back."""
    names = ", ".join(t.name for t in tag_set.tags.all()) or "no smell"
    url = reverse("card", args=[slug, turn.pk])
    conversation = shortened(turn.conversation.key, 48)
    return format_html(
        'Saved your tags: {} on <a href="{}">{} turn {}</a>.',
        names,
        url,
        conversation,
        turn.index,
    )


def save(request: HttpRequest, turn: Turn, group: Group) -> tuple[PostedTags, str, str, int]:
    """The card's POST while its group open-sorts (annotate.card renders the answer): save
    the annotator's tag set. Returns (the input, what was saved in words, "", 200) or, when
    refused, (the input to send back, "", the refusal naming the field, its HTTP status:
    422 for bad input, 409 when the board was frozen meanwhile): nothing saved."""
    posted = PostedTags.read(request.POST)
    try:
        tag_set = tagging.save_tag_set(
            turn=turn,
            group=group,
            annotator=request.user,
            tags=posted.tags,
            note=posted.note,
            no_smell=posted.no_smell,
        )
    except tagging.TagRefused as e:
        return posted, "", f"Not saved: {e}", e.status
    return posted, tags_saved(group.study.slug, turn, tag_set), "", 200
