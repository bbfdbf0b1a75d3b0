"""An annotator is told on their next card when the keys changed with a new taxonomy
version (issue 20, defect 2), once, and never on their first card."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import HTMX, make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db


def notice(client, study, turn, **headers) -> str:
    html = client.get(reverse("card", args=[study.slug, turn.pk]), **headers).content.decode()
    if 'id="key-changes"' not in html:
        return ""
    start = html.index('id="key-changes"')
    return html[start : html.index("</div>", start)]


def test_the_next_card_after_a_new_version_says_which_keys_changed(client):
    study = make_study("s1")
    alice = make_user("alice")
    group = make_group(study, "g1", [alice])
    first, second = make_conversation(study, "c1", n_turns=2, group=group).turns.all()
    client.force_login(alice)
    assert notice(client, study, first) == ""  # the first card: nothing to compare with

    v2, _ = study.taxonomy_version.derive(
        merge=[{"into": "must_do_omission", "from": ["must_not_violation"]}],
        split=[{"code": "ambiguous_instruction", "into": ["Ambiguous Target", "Ambiguous Goal"]}],
        rename={"code_rollback": "Rollback"},
    )
    study.taxonomy_version = v2
    study.save()
    told = notice(client, study, second, **HTMX)  # the next card, as htmx brings it
    assert "1: no longer Ambiguous Instruction" in told
    assert "4: no longer Must-Not Violation" in told
    assert "a: Ambiguous Target (new)" in told and "b: Ambiguous Goal (new)" in told
    assert "8: Code Rollback is now called Rollback" in told
    assert "2:" not in told  # an unchanged key is not listed
    assert notice(client, study, first) == ""  # told once


def test_the_panel_keeps_the_new_versions_order_after_a_merge_and_a_split(client):
    """Keys last across versions, but the panel lists the types in the taxonomy's order
    (the version's), never by key: a split's new types where the split one stood."""
    import re

    study = make_study("s1")
    alice = make_user("alice")
    group = make_group(study, "g1", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    v2, _ = study.taxonomy_version.derive(
        merge=[{"into": "must_do_omission", "from": ["must_not_violation"]}],
        split=[{"code": "ambiguous_instruction", "into": ["Ambiguous Target", "Ambiguous Goal"]}],
    )
    study.taxonomy_version = v2
    study.save()
    client.force_login(alice)
    html = client.get(reverse("card", args=[study.slug, turn.pk])).content.decode()
    shown = re.findall(r'name="types" value="([^"]+)"', html)
    order = [t.code for t in v2.type_list()]
    assert shown == order
    # the split's parts first, where ambiguous_instruction stood (the first type of v1)
    assert order[:2] == [t.code for t in v2.type_list() if t.name.startswith("Ambiguous")]
    assert "must_not_violation" not in shown
    # and the keys are not in order: the parts took free keys (a, b), the rest kept theirs
    keys = re.findall(r'name="types" value="[^"]+" data-hotkey="([^"]+)"', html)
    assert keys[:2] == ["a", "b"] and keys != sorted(keys)
