"""Time and flags per episode keep round 1 blind (issue 21), in the episode access world
(tests/access/test_episode_access.py): whoever judges an episode whose round 1 is not over
in their group (a lead who annotates it, whether they judged it yet or not) sees nobody
else's time on it on the lead's time page, nor anyone else's flag reason on the flags page,
until every annotator has judged it; their own always. A lead who does not judge it sees
them all. The episode card shows nobody's time, and a flag only to its author."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import EpisodeJudgement, EpisodeSkip, EpisodeTime, SkipKind, Source
from tests.timing.kept import compute_times

from . import test_episode_access as episode_access

world = episode_access.world  # the episode access world, a fixture
client_of = episode_access.client_of

pytestmark = pytest.mark.django_db

SECRET_FLAG = "Turn 2 looks cut short to me"


@pytest.fixture
def timed(world):
    users, episode = world["users"], world["episode"]
    times = {"annotator": 11_000, "co_annotator": 23_000, "lead_annotating": 37_000}
    for role, ms in times.items():
        EpisodeTime.objects.create(episode=episode, annotator=users[role], active_ms=ms)
    EpisodeSkip.objects.create(
        episode=episode, annotator=users["annotator"], kind=SkipKind.FLAG, reason=SECRET_FLAG
    )
    return world


def _time_page(world, role: str) -> str:
    """The time page after a "Compute": the kept tables hold every time, so whoever judges
    the episode blind must get their own, computed live."""
    compute_times(world["episode"].conversation.study)
    return client_of(world, role).get(reverse("lead_card_times", args=["ep"])).content.decode()


def _annotators_with_times(page: str) -> set[str]:
    body = page[page.index('data-table="episode-annotator"') :].split("</table>")[0]
    return set(re.findall(r'<th scope="row">([^<]+)</th>', body))


def _episode_row(page: str, episode) -> str:
    return page[page.index(f'<tr data-episode-id="{episode.pk}">') :].split("</tr>")[0]


def _flags_page(world, role: str) -> str:
    return client_of(world, role).get(reverse("lead_flags", args=["ep"])).content.decode()


def _judge(world, role: str) -> None:
    group = world["group"]
    EpisodeJudgement.objects.create(
        episode=world["episode"], annotator=world["users"][role], group=group, valid=True,
        taxonomy_version=group.study.taxonomy_version, source=Source.BROWSER,
    )  # fmt: skip


def test_a_lead_who_judges_the_episode_sees_only_their_own_time_in_round_1(timed):
    # they have not judged it yet; then they have, but round 1 is not over: still blind
    for judged in (False, True):
        if judged:
            _judge(timed, "lead_annotating")
        page = _time_page(timed, "lead_annotating")
        assert _annotators_with_times(page) == {"lead_annotating"}, judged
        row = _episode_row(page, timed["episode"])
        assert "37.0 s" in row and "11.0 s" not in row and "23.0 s" not in row
        assert "17.0 s" not in page and "24.0 s" not in page  # no median giving them away


def test_once_round_1_is_over_the_lead_who_judged_sees_every_time(timed):
    for role in ("co_annotator", "lead_annotating"):  # "annotator" judged in the world
        _judge(timed, role)
    page = _time_page(timed, "lead_annotating")
    assert _annotators_with_times(page) == {"annotator", "co_annotator", "lead_annotating"}
    row = _episode_row(page, timed["episode"])
    assert ">3<" in row and "23.0 s" in row  # n and the median of the three


def test_a_lead_who_does_not_judge_the_episode_sees_every_time(timed):
    page = _time_page(timed, "lead")
    assert _annotators_with_times(page) == {"annotator", "co_annotator", "lead_annotating"}
    assert "23.0 s" in _episode_row(page, timed["episode"])


def test_a_flag_reason_stays_hidden_from_a_lead_who_judges_the_episode_in_round_1(timed):
    page = _flags_page(timed, "lead_annotating")
    assert SECRET_FLAG not in page
    assert "hidden while you judge this episode in round 1" in page
    # their link opens their own card, not another group's view
    assert f"episodes/{timed['episode'].pk}/?group=" not in page
    assert SECRET_FLAG in _flags_page(timed, "lead")
    for role in ("co_annotator", "lead_annotating"):
        _judge(timed, role)
    assert SECRET_FLAG in _flags_page(timed, "lead_annotating")


@pytest.mark.parametrize(
    "role", ["co_annotator", "lead_annotating", "moderator", "lead", "annotator"]
)
def test_the_episode_card_shows_no_time_and_a_flag_only_to_its_author(timed, role):
    url = reverse("episode_card", args=["ep", timed["episode"].pk])
    body = client_of(timed, role).get(url).content.decode()
    for ms in ("11.0", "23.0", "37.0", "11000", "23000", "37000"):
        assert ms not in body
    assert (SECRET_FLAG in body) == (role == "annotator")
