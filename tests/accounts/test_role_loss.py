"""Whoever loses a role loses what it opened at once, on the very next request: no role is
cached in the session or anywhere else, and every check reads the membership or the seat."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_group

pytestmark = pytest.mark.django_db


def test_it_closes_the_report_to_a_moderator_the_lead_unseats(client, study, lead, charlie):
    group = make_group(study, "G1")
    client.force_login(lead)
    client.post(
        reverse("lead_group_moderator", args=[study.slug, group.pk]), {"username": "charlie"}
    )
    moderator = client.__class__()
    moderator.force_login(charlie)
    report = reverse("report", args=[study.slug])
    assert moderator.get(report).status_code == 200

    client.post(reverse("lead_group_moderator", args=[study.slug, group.pk]), {"username": ""})

    assert moderator.get(report).status_code == 403
