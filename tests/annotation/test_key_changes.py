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
