"""A revision refused because its round closed meanwhile: the revise form shows what is
stored (never the refused ticks), and the page says the labels were not saved."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation
from tests.factories import HTMX, study_url

pytestmark = pytest.mark.django_db


def revise(client, user, turn, *codes, round=2):
    client.force_login(user)
    data = {"types": list(codes), "round": round}
    return client.post(study_url("discussion", turn), data, **HTMX)


def test_it_shows_the_stored_labels_after_a_refused_revision(
    client, monkeypatch, study, alice, bob, disputed
):
    study.discussion_rounds = 2
    study.save()
    revise(client, alice, disputed, "ambiguous_instruction")
    real_submit = Annotation.submit

    def bob_gets_there_first(cls, **fields):
        """Bob's round-2 labels land between alice's page reading round 2 and her write:
        still different from hers, so round 3 opens and her round-2 write is refused."""
        monkeypatch.setattr(Annotation, "submit", real_submit)
        types = [study.taxonomy_version.types_by_code()["must_do_omission"]]
        real_submit(turn=disputed, group=fields["group"], annotator=bob, round=2, types=types)
        return real_submit(**fields)

    monkeypatch.setattr(Annotation, "submit", classmethod(bob_gets_there_first))
    response = revise(client, alice, disputed, "code_rollback")
    html = response.content.decode()
    assert response.status_code == 409
    revise_form = html[html.index('id="revise"') :]
    ticked = set(re.findall(r'name="types" value="([\w-]+)"[^>]* checked', revise_form))
    assert ticked == {"ambiguous_instruction"}  # her stored labels, not the refused ones
    assert "data-unsaved" not in revise_form
    assert 'name="round" value="3"' in revise_form
    assert "Your labels were not saved: This card is in round 3, not round 2." in html
    assert "The form shows what is stored." in html
    assert not Annotation.objects.filter(turn=disputed, round=3).exists()
    mine = Annotation.objects.get(turn=disputed, annotator=alice, round=2, is_current=True)
    assert mine.codes == {"ambiguous_instruction"}


def test_it_tells_the_browser_never_to_keep_a_copy_of_the_discussion(client, alice, disputed):
    client.force_login(alice)
    assert "no-store" in client.get(study_url("discussion", disputed))["Cache-Control"]
