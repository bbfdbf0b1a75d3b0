"""Pages name types by their names; codes belong in files and the API."""

from __future__ import annotations

import re

from django.urls import reverse

from annotation.models import Proposal
from tests.factories import label, study_url


def _visible_text(html: str) -> str:
    """The page without its tags and attribute values (codes may sit in value="...")."""
    return re.sub(r"<[^>]*>", " ", html)


def test_the_moderation_queue_shows_type_names(client, moderator, disputed):
    client.force_login(moderator)
    text = _visible_text(client.get(study_url("moderate_queue")).content.decode())
    assert "Ambiguous Instruction" in text and "Must-Do Omission" in text
    assert "ambiguous_instruction" not in text and "must_do_omission" not in text


def test_mapped_proposals_show_the_types_name(client, study, lead, alice, bob, turns_a):
    proposal = Proposal.propose(
        study=study, turn=turns_a[0], proposer=alice, name="Idle", definition="d", reason="r"
    )
    proposal.map_to(lead, "repetitive_response")
    label(turns_a[0], alice, "code_rollback")
    label(turns_a[0], bob, "code_rollback")
    client.force_login(lead)
    for page in (
        client.get(study_url("card_timeline", turns_a[0])),
        client.get(reverse("proposals", args=[study.slug])),
    ):
        text = _visible_text(page.content.decode())
        assert "Repetitive Response" in text, page.request["PATH_INFO"]
        assert "repetitive_response" not in text
    client.force_login(alice)
    text = _visible_text(client.get(reverse("study", args=[study.slug])).content.decode())
    assert "Repetitive Response" in text and "repetitive_response" not in text
