"""The studies page's "New study" form (issue 20, point 4): a user with the add_study
permission (a superuser has it) creates a study and leads it; anyone else sees no form and
is refused its POST."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from annotation.models import Kind, Membership, Phase, Role, Study
from tests.factories import make_study, make_user

pytestmark = pytest.mark.django_db

FORM = {"slug": "smells-2025", "name": "Smells 2025", "taxonomy": "interaction-smells"}


@pytest.fixture
def creator(db):
    """dora may create studies (the permission, no superuser)."""
    user = make_user("dora")
    user.user_permissions.add(Permission.objects.get(codename="add_study"))
    return get_user_model().objects.get(pk=user.pk)  # permissions are cached per instance


def new_study(client, **data):
    return client.post(reverse("study_new"), {**FORM, "phase": "closed_sort", **data})


def test_a_user_allowed_to_sees_the_form_and_leads_the_study_they_create(client, creator):
    client.force_login(creator)
    assert 'action="/studies/new/"' in client.get(reverse("home")).content.decode()
    response = new_study(client, phase="open_sort")
    study = Study.objects.get(slug="smells-2025")
    assert response.status_code == 302 and response.url == reverse("study", args=[study.slug])
    assert study.name == "Smells 2025" and study.phase == Phase.OPEN_SORT
    assert study.taxonomy_version.taxonomy.slug == "interaction-smells"
    membership = Membership.objects.get(study=study, user=creator)
    assert (membership.role, membership.kind) == (Role.LEAD, Kind.EXPERT)
    # their lead pages open
    assert client.get(reverse("lead_conversations", args=[study.slug])).status_code == 200


def test_a_superuser_may_too(client):
    admin = get_user_model().objects.create_superuser("root", "root@example.org", "pw-secret")
    client.force_login(admin)
    assert 'action="/studies/new/"' in client.get(reverse("home")).content.decode()
    new_study(client, taxonomy="agent-misalignment")
    study = Study.objects.get(slug="smells-2025")
    assert study.taxonomy_version.taxonomy.slug == "agent-misalignment"
    assert Membership.objects.get(study=study, user=admin).role == Role.LEAD


def test_anyone_else_sees_no_form_and_is_refused(client, alice, study, lead):
    client.force_login(alice)
    assert "New study" not in client.get(reverse("home")).content.decode()
    assert new_study(client).status_code == 403
    client.force_login(lead)  # leading a study gives no right to create one
    assert "New study" not in client.get(reverse("home")).content.decode()
    assert new_study(client).status_code == 403
    assert not Study.objects.filter(slug="smells-2025").exists()


def test_a_visitor_who_is_not_logged_in_is_sent_to_log_in(client):
    response = new_study(client)
    assert response.status_code == 302 and "/accounts/login/" in response.url
    assert not Study.objects.exists()


def test_the_form_only_posts(client, creator):
    client.force_login(creator)
    assert client.get(reverse("study_new")).status_code == 405


def test_a_taken_slug_is_named_and_what_was_typed_comes_back(client, creator):
    make_study("smells-2025")
    client.force_login(creator)
    response = new_study(client, name="Second try")
    assert response.status_code == 422
    body = response.content.decode()
    assert "a study with slug &#x27;smells-2025&#x27; already exists" in body
    assert 'value="Second try"' in body
    assert Study.objects.count() == 1
    assert not Membership.objects.filter(user=creator).exists()


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("slug", "my study", "letters, numbers, underscores or hyphens"),
        ("taxonomy", "../presets/split-check", "Select a valid choice"),
        ("phase", "sideways", "Select a valid choice"),
        ("slug", "", "This field is required"),
    ],
)
def test_bad_input_is_refused_by_field(client, creator, field, value, says):
    client.force_login(creator)
    response = new_study(client, **{field: value})
    assert response.status_code == 422
    assert says in response.content.decode()
    assert not Study.objects.exists()
