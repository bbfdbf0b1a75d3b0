"""A NUL byte in a comment, note, evidence or rationale: PostgreSQL cannot store it and
SQLite can, so both refuse it the same way, as a form error (422) that names the field.
CI runs these on both databases."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Comment, Consensus
from tests.factories import HTMX, study_url

pytestmark = pytest.mark.django_db

NUL = "before\x00after"


def check_comment(client, alice, disputed, headers):
    client.force_login(alice)
    response = client.post(study_url("comment", disputed), {"text": NUL}, **headers)
    assert response.status_code == 422
    assert "Comment: Null characters are not allowed." in response.content.decode()
    assert not Comment.objects.exists()


def check_note(client, alice, disputed, headers, field):
    client.force_login(alice)
    data = {"types": ["code_rollback"], "round": "2", field: NUL}
    response = client.post(study_url("discussion", disputed), data, **headers)
    assert response.status_code == 422
    html = response.content.decode()
    assert f"{field.capitalize()}: Null characters are not allowed." in html
    assert not Annotation.objects.filter(turn=disputed, round=2).exists()


def check_rationale(client, moderator, disputed, headers):
    client.force_login(moderator)
    data = {"types": ["code_rollback"], "rationale": NUL}
    response = client.post(study_url("decide", disputed), data, **headers)
    assert response.status_code == 422
    html = response.content.decode()
    assert "Rationale: Null characters are not allowed." in html
    assert not Consensus.objects.exists()


@pytest.mark.parametrize("headers", [{}, HTMX])
def test_it_refuses_a_nul_byte_in_a_comment(client, alice, disputed, headers):
    check_comment(client, alice, disputed, headers)


@pytest.mark.parametrize("field", ["note", "evidence"])
def test_it_refuses_a_nul_byte_in_a_round_2_note(client, alice, disputed, field):
    check_note(client, alice, disputed, HTMX, field)


def test_it_refuses_a_nul_byte_in_a_rationale(client, moderator, disputed):
    check_rationale(client, moderator, disputed, HTMX)
