"""What the card and the discussion page say about where the reader is and what the types
mean: "Turn N of M" on the turn itself and on each earlier turn, and the guideline panel
(each type's definition and example, grouped as on the form), on both pages."""

from __future__ import annotations

import re

import pytest

from tests.factories import HTMX, label, study_url

pytestmark = pytest.mark.django_db


def marks(body: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", m).strip() for m in re.findall(r'class="turn-mark[^"]*">(.*?)<', body)
    ]


def test_the_turn_itself_says_turn_n_of_m(client, alice, turns):
    client.force_login(alice)

    full = client.get(study_url("card", turns[1])).content.decode()
    partial = client.get(study_url("card", turns[1]), **HTMX).content.decode()

    assert marks(full) == ["Turn 2 of 3"]
    assert marks(partial) == ["Turn 2 of 3"]
    section = full[full.index('<section class="turn"') :]
    assert section.index('class="turn-mark') < section.index('class="message user"')


def test_each_earlier_turn_says_its_number(client, alice, turns):
    client.force_login(alice)

    body = client.get(study_url("card_context", turns[2])).content.decode()

    assert marks(body) == ["Turn 1 of 3", "Turn 2 of 3"]


def guide(body: str) -> str:
    start = body.index('id="guide"')
    return body[start : body.index("</aside>", start)]


def test_the_guideline_panel_gives_each_types_definition_and_example(client, study, alice, turns):
    client.force_login(alice)
    types = study.taxonomy_version.type_list()

    panel = guide(client.get(study_url("card", turns[0])).content.decode())

    for t in types:
        assert f'data-type="{t.code}"' in panel
        assert t.name in panel
    assert "The user&#x27;s instruction admits several interpretations" in panel
    assert "asks for &quot;a streaming API client&quot;" in panel  # the example
    assert "data-code" not in panel  # what marks a rendered label (tests/access/probe.py)
    # grouped as on the form: each category's heading, in the taxonomy's order
    categories = list(dict.fromkeys(t.category.name for t in types))
    positions = [panel.index(name) for name in categories]
    assert positions == sorted(positions)


def test_the_card_has_a_visible_button_for_the_guideline(client, alice, turns):
    client.force_login(alice)

    body = client.get(study_url("card", turns[0])).content.decode()

    assert re.search(r"<button[^>]*data-guide-open[^>]*>\s*Guideline", body)


def test_the_discussion_page_has_the_guideline_too(client, alice, bob, turns):
    label(turns[0], alice, "code_rollback")
    label(turns[0], bob, "must_do_omission")
    client.force_login(alice)

    body = client.get(study_url("discussion", turns[0])).content.decode()

    assert 'data-type="code_rollback"' in guide(body)
    assert "data-guide-open" in body
