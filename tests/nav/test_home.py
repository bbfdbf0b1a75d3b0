"""The home page: each of my studies with my progress, and for a lead the study's cards per
state, in a number of queries that does not grow with the studies."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Kind, Role
from tests.factories import label, make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db


def home(client):
    r = client.get(reverse("home"))
    assert r.status_code == 200
    return r


def progress_of(r, slug: str) -> dict:
    return next(row for row in r.context["rows"] if row["study"].slug == slug)


def test_each_study_shows_my_progress(client, study, alice, bob, turns):
    label(turns[0], alice)
    label(turns[1], alice, "code_rollback")
    label(turns[0], bob)
    client.force_login(alice)
    r = home(client)
    row = progress_of(r, study.slug)
    assert (row["done"], row["total"]) == (2, 4)
    assert "2 of 4 cards labelled" in r.content.decode()
    assert "states" not in row  # alice is no lead: no study-wide counts


def test_a_study_without_cards_for_me_says_so(client, study, alice):
    study.add_member(alice)
    client.force_login(alice)
    assert "no cards assigned to you yet" in home(client).content.decode()


def test_a_lead_sees_the_study_cards_per_state(client, study, lead, alice, bob, turns):
    label(turns[0], alice)
    label(turns[0], bob)  # agreed
    label(turns[1], alice, "code_rollback")
    label(turns[1], bob)  # disputed
    label(turns[2], alice)  # still open
    client.force_login(lead)
    r = home(client)
    row = progress_of(r, study.slug)
    assert row["states"] == {"open": 2, "disputed": 1, "escalated": 0, "agreed": 1}
    assert row["total"] == 0  # the lead annotates nothing here
    html = r.content.decode()
    assert "open 2" in html and "disputed 1" in html and "agreed 1" in html


def test_a_non_member_sees_nothing_of_the_study(client, study, charlie, turns):
    client.force_login(charlie)
    r = home(client)
    assert r.context["rows"] == []
    assert study.name not in r.content.decode()


def add_study(slug: str, alice, bob):
    s = make_study(slug)
    s.add_member(alice, Role.LEAD, Kind.EXPERT)
    group = make_group(s, "g", [alice, bob])
    t = make_conversation(s, f"{slug}-c", n_turns=3, group=group).turns.first()
    label(t, alice)
    label(t, bob, "code_rollback")
    return s


def test_the_home_page_costs_a_bounded_number_of_queries(
    client, alice, bob, django_assert_max_num_queries
):
    add_study("one", alice, bob)
    client.force_login(alice)
    # 6 (the session, the user, the studies, the memberships I lead, my kept progress, the
    # groups' kept figures), and 2 for the "New study" form: may alice create studies (her
    # and her groups' permissions)
    with django_assert_max_num_queries(8):
        r = home(client)
    assert progress_of(r, "one")["states"]["disputed"] == 1
    for i in range(6):
        add_study(f"more-{i}", alice, bob)
    with django_assert_max_num_queries(8):
        r = home(client)
    assert len(r.context["rows"]) == 7
    assert all(row["done"] == 1 and row["total"] == 3 for row in r.context["rows"])


def test_a_superuser_sees_every_study_as_a_lead(client, study, alice, bob, turns):
    root = make_user("root")
    root.is_superuser = True
    root.save()
    label(turns[0], alice)
    client.force_login(root)
    row = progress_of(home(client), study.slug)
    assert row["states"]["open"] == 4


def test_my_progress_on_the_home_page_is_the_study_pages(client, study, alice, bob, turns):
    """Home and the study's page say the same: my round-1 labels of my cards (the kept queue
    rows), where home counted the turns itself."""
    label(turns[0], alice)
    label(turns[2], alice)
    client.force_login(alice)
    row = progress_of(home(client), study.slug)
    page = client.get(reverse("study", args=[study.slug]))
    assert (row["done"], row["total"]) == (page.context["done"], page.context["total"]) == (2, 4)
