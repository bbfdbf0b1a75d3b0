"""The lead's time-per-card page: median and p90 of active time per annotator, per type and
per annotator and type, with n; leads only; and blind: a lead who annotates a card still in
round 1 never learns another annotator's round-1 labels on it from the per-type tables, nor
their time on it (issue 24, point 4)."""

from __future__ import annotations

import re

import pytest

from annotation.models import CardTime, Kind, Role
from tests.factories import (
    AMBIGUOUS,
    ROLLBACK,
    label,
    make_conversation,
    make_group,
    make_user,
    study_url,
)
from tests.timing.kept import compute_times

ROLLBACK_NAME = "Code Rollback"


def timed(turn, user, seconds: float) -> None:
    CardTime.objects.create(turn=turn, annotator=user, active_ms=int(seconds * 1000))


def table(html: str, table_id: str) -> list[list[str]]:
    """The body rows of the page's table `table_id`, as lists of cell texts."""
    start = html.index(f'data-table="{table_id}"')
    body = html[start : html.index("</table>", start)]
    body = body[body.index("<tbody>") :]
    return [
        [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        ]
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def page(client, user, study, compute: bool = True) -> str:
    """The page as `user` reads it, after a "Compute" (`compute`): the kept tables, or for a
    lead the times lock applies to, their own computed live however fresh the kept ones."""
    if compute:
        compute_times(study)
    client.force_login(user)
    response = client.get(study_url("lead_card_times", slug=study.slug))
    assert response.status_code == 200
    return response.text


@pytest.fixture
def cards(study, alice, bob):
    group = make_group(study, "g1", [alice, bob], moderator=make_user("moderator"))
    return list(make_conversation(study, "c1", n_turns=4, group=group).turns.order_by("index"))


def test_the_lead_sees_median_and_p90_per_annotator_and_per_type(
    client, study, lead, cards, alice, bob
):
    t1, t2, t3, t4 = cards
    for turn, seconds in zip(cards, [10, 20, 30, 40], strict=True):
        timed(turn, alice, seconds)
    timed(t1, bob, 60)
    timed(t2, bob, 90)
    label(t1, alice, ROLLBACK)
    label(t2, alice, ROLLBACK)
    label(t3, alice)  # no smell
    label(t4, alice, AMBIGUOUS)
    label(t1, bob, ROLLBACK)
    label(t2, bob)
    html = page(client, lead, study)

    assert table(html, "annotator") == [
        ["alice", "4", "25.0 s", "37.0 s"],
        ["bob", "2", "75.0 s", "87.0 s"],
    ]
    by_type = {row[0]: row[1:] for row in table(html, "type")}
    # Code Rollback: alice 10 and 20 s, bob 60 s; p90 at position 0.9 * 2 = 1.8: 20 + 0.8 * 40
    assert by_type[ROLLBACK_NAME] == ["3", "20.0 s", "52.0 s"]
    assert by_type["Ambiguous Instruction"] == ["1", "40.0 s", "40.0 s"]
    assert by_type["No smell"] == ["2", "60.0 s", "84.0 s"]
    assert ["bob", ROLLBACK_NAME, "1", "60.0 s", "60.0 s"] in table(html, "annotator-type")
    assert ["alice", ROLLBACK_NAME, "2", "15.0 s", "19.0 s"] in table(html, "annotator-type")


def test_the_page_states_how_the_percentile_is_computed(client, study, lead):
    html = page(client, lead, study)
    assert "numpy.percentile" in html
    assert "linear" in html
    assert "No time recorded yet" in html


def test_the_page_is_for_leads_only(client, study, cards, alice):
    moderator = make_user("moderator")
    for user, status in ((alice, 403), (moderator, 403), (make_user("stranger"), 404)):
        client.force_login(user)
        assert client.get(study_url("lead_card_times")).status_code == status, user


def test_the_study_page_links_to_it_for_leads_only(client, study, lead, cards, alice):
    url = study_url("lead_card_times")
    client.force_login(lead)
    assert f'href="{url}"' in client.get(study_url("study")).text
    client.force_login(alice)
    assert f'href="{url}"' not in client.get(study_url("study")).text


@pytest.fixture
def lead_annotates(study, lead, bob):
    """The lead labels the cards of a group with bob; bob labelled first."""
    group = make_group(study, "g2", [bob])
    group.annotators.add(lead)
    t1, t2 = make_conversation(study, "c2", n_turns=2, group=group).turns.order_by("index")
    timed(t1, bob, 60)
    timed(t2, bob, 45)
    label(t1, bob, ROLLBACK)
    label(t2, bob)  # no smell
    return t1, t2


def test_a_lead_who_annotates_learns_no_round1_labels_of_open_cards(
    client, study, lead, bob, lead_annotates
):
    t1, t2 = lead_annotates
    html = page(client, lead, study)
    assert ROLLBACK_NAME not in html
    assert "No smell" not in html
    assert table(html, "annotator-type") == [["No labels to show yet."]]

    # another lead, who labels none of these cards, sees bob's labels
    other = make_user("lead2")
    study.add_member(other, Role.LEAD, Kind.EXPERT)
    rows = table(page(client, other, study), "annotator-type")
    assert ["bob", ROLLBACK_NAME, "1", "60.0 s", "60.0 s"] in rows

    # once the lead has labelled t1 the card leaves round 1, and bob's label on it shows;
    # t2, still open, stays hidden
    label(t1, lead, AMBIGUOUS)
    html = page(client, lead, study)
    rows = table(html, "annotator-type")
    assert ["bob", ROLLBACK_NAME, "1", "60.0 s", "60.0 s"] in rows
    assert "No smell" not in html


def test_a_lead_who_annotates_sees_no_other_times_on_open_cards(
    client, study, lead, bob, lead_annotates
):
    """Bob's 60 s on t1 and 45 s on t2 are his round-1 work on cards the lead labels blind:
    not shown until the card leaves round 1. The lead's own time always shows."""
    t1, t2 = lead_annotates
    timed(t2, lead, 30)
    assert table(page(client, lead, study), "annotator") == [["lead", "1", "30.0 s", "30.0 s"]]

    # another lead, who labels none of these cards, sees bob's times
    other = make_user("lead2")
    study.add_member(other, Role.LEAD, Kind.EXPERT)
    assert ["bob", "2", "52.5 s", "58.5 s"] in table(page(client, other, study), "annotator")

    # t1 leaves round 1 once the lead has labelled it: bob's time on it shows, t2's not
    label(t1, lead, AMBIGUOUS)
    assert table(page(client, lead, study), "annotator") == [
        ["bob", "1", "60.0 s", "60.0 s"],
        ["lead", "1", "30.0 s", "30.0 s"],
    ]
