"""Skip, flag and time per episode (issue 21: "everything that works on cards works on
episodes"): an annotator skips an episode or flags it with a reason from its card, the next
episode comes and this one goes to the end of their episode queue until they judge it; the
lead lists the flags (the episode's session, turns and run; never anyone's judgement); the
card's clock reports active time to the episode's endpoint, under the cards' caps, and the
lead's time page shows it per annotator and per episode (the median of its annotators')."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.episodes.queue import awaiting
from annotation.importers.episodes import import_episodes
from annotation.models import (
    CardSkip,
    CardTime,
    Conversation,
    Episode,
    EpisodeSkip,
    EpisodeTime,
    Role,
    Unit,
)
from tests.factories import make_group, make_user
from tests.timing.kept import compute_times

from .conftest import episode, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(agents, tmp_path):
    alice, bob, carl = make_user("alice"), make_user("bob"), make_user("carl")
    mod, lead = make_user("mod"), make_user("lead")
    group = make_group(agents, "E1", annotators=[alice, bob], moderator=mod)
    other = make_group(agents, "E2", annotators=[carl])
    type(group).objects.filter(pk__in=[group.pk, other.pk]).update(unit=Unit.EPISODE)
    agents.add_member(lead, Role.LEAD)
    Conversation.objects.filter(external_id="s1").assign(group)
    Conversation.objects.filter(external_id="s2").assign(other)
    records = [episode(first=1, last=2), episode(first=2, last=3), episode(first=3, last=4)]
    records.append(episode("s2", 1, 2))
    import_episodes(agents, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    e1, e2, e3, e4 = Episode.objects.order_by("conversation__external_id", "first_turn")
    return {"study": agents, "e": [e1, e2, e3], "e4": e4, "alice": alice, "bob": bob}


def client_of(username: str) -> Client:
    client = Client()
    client.force_login(make_user(username))
    return client


def url(e, name="episode_card") -> str:
    return reverse(name, args=["ag", e.pk])


def queue_of(world, who="alice") -> list[int]:
    return [e for e, _ in awaiting(world[who], world["study"])]


def judge(username, e, round=1, **data):
    data = {"round": str(round), "valid": "0", "invalid_reason": "other"} | data
    response = client_of(username).post(url(e), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    return response


def test_a_skipped_episode_goes_to_the_end_of_my_queue_and_the_next_one_comes(world):
    e1, e2, e3 = world["e"]
    client = client_of("alice")
    response = client.post(url(e1, "episode_skip"))
    assert response.status_code == 302 and response.url == url(e2)
    assert queue_of(world) == [e2.pk, e3.pk, e1.pk]
    assert client.get(reverse("queue", args=["ag"])).url == url(e2)
    page = client.get(url(e2)).content.decode()
    assert "Skipped the episode of turns 1–2 of" in page and "end of your queue" in page
    # bob's queue is his own
    assert queue_of(world, "bob") == [e1.pk, e2.pk, e3.pk]
    # a second skip goes after the first: the oldest put-off comes first
    client.post(url(e2, "episode_skip"))
    assert queue_of(world) == [e3.pk, e1.pk, e2.pk]
    # on the card, I am told I skipped it
    assert "You skipped this episode" in client.get(url(e1)).content.decode()
    assert "You skipped this episode" not in client_of("bob").get(url(e1)).content.decode()


def test_judging_a_skipped_episode_clears_its_skip(world):
    e1, e2, e3 = world["e"]
    client_of("alice").post(url(e1, "episode_skip"))
    for e in (e2, e3):
        judge("alice", e)
    assert queue_of(world) == [e1.pk]  # it came back
    judge("alice", e1)
    assert queue_of(world) == []
    # bob disagrees on e1 and e2: both come back to alice for round 2, in the sessions'
    # order, e1 no longer put last (its skip was cleared by her judgement)
    for e in (e1, e2):
        judge("bob", e, invalid_reason="normative_prior_bias")
    assert queue_of(world) == [e1.pk, e2.pk]
    assert "You skipped this episode" not in client_of("alice").get(url(e1)).content.decode()
    # a skip in the discussion round puts it last again, until she judges round 2
    client_of("alice").post(url(e1, "episode_skip"))
    assert queue_of(world) == [e2.pk, e1.pk]
    judge("alice", e1, round=2, invalid_reason="normative_prior_bias")
    assert queue_of(world) == [e2.pk]


def test_the_only_episode_left_comes_back_at_once(world):
    e1, e2, e3 = world["e"]
    for e in (e1, e2):
        judge("alice", e)
    response = client_of("alice").post(url(e3, "episode_skip"))
    assert response.url == url(e3)


def test_a_flag_needs_a_reason_and_records_it(world):
    e1, e2, _ = world["e"]
    client = client_of("alice")
    response = client.post(url(e1, "episode_flag"), {"reason": "  "})
    assert response.status_code == 422
    assert "Not flagged: say why you flag this episode" in response.content.decode()
    assert not EpisodeSkip.objects.exists()
    too_long = client.post(url(e1, "episode_flag"), {"reason": "x" * 2001})
    assert too_long.status_code == 422 and "under 2000" in too_long.content.decode()
    response = client.post(url(e1, "episode_flag"), {"reason": "is turn 2 cut?"})
    assert response.url == url(e2)
    row = EpisodeSkip.objects.get()
    assert (row.kind, row.reason, row.annotator.username) == ("flag", "is turn 2 cut?", "alice")
    assert queue_of(world)[-1] == e1.pk
    assert "You flagged this episode" in client.get(url(e1)).content.decode()
    # a skip replaces the flag (one row per annotator and episode)
    client.post(url(e1, "episode_skip"))
    assert EpisodeSkip.objects.get().kind == "skip"
    assert not CardSkip.objects.exists()  # the cards' skips (and kept queue) untouched


def test_only_the_episodes_annotators_put_it_off(world):
    e1 = world["e"][0]
    for name in ("episode_skip", "episode_flag"):
        assert client_of("mod").post(url(e1, name), {"reason": "r"}).status_code == 403
        assert client_of("lead").post(url(e1, name), {"reason": "r"}).status_code == 403
        assert client_of("carl").post(url(e1, name), {"reason": "r"}).status_code == 404
        assert client_of("alice").get(url(e1, name)).status_code == 405
        assert Client().post(url(e1, name)).status_code == 302
    assert not EpisodeSkip.objects.exists()
    # the moderator's and lead's reading of the card offers no skip
    assert 'id="skip-flag"' not in client_of("mod").get(url(e1)).content.decode()
    assert 'id="skip-flag"' in client_of("alice").get(url(e1)).content.decode()


def test_the_lead_lists_flags_with_the_episodes_identity_and_no_judgement(world):
    e1 = world["e"][0]
    judge("bob", e1, invalid_reason="normative_prior_bias")
    client_of("alice").post(url(e1, "episode_flag"), {"reason": "is turn 2 cut?"})
    client_of("bob").post(url(e1, "episode_skip"))  # a skip is no flag: not listed
    flags_url = reverse("lead_flags", args=["ag"])
    page = client_of("lead").get(flags_url).content.decode()
    section = page[page.index('id="episode-flags"') :]
    row = section[section.index(f'data-episode-id="{e1.pk}"') :].split("</tr>")[0]
    key = e1.conversation.key
    for shown in (key, "1–2 of 4", "<code>gpt</code>", "alice", "is turn 2 cut?", "not judged"):
        assert shown in row, shown
    assert section.count("<tr data-episode-id") == 1
    assert "Normative prior bias" not in page and "normative_prior_bias" not in page
    # the link opens the flagger's group's episode for a lead who does not judge it
    assert f"{url(e1)}?group=" in row
    study_page = client_of("lead").get(reverse("study", args=["ag"])).content.decode()
    assert "Flagged cards</a> (0; 1 flagged episode)" in study_page
    judge("alice", e1)
    page = client_of("lead").get(flags_url).content.decode()
    assert "judged since" in page
    assert "Other" not in page[page.index('id="episode-flags"') :]
    # only leads read it
    assert client_of("alice").get(flags_url).status_code == 403


def test_the_clock_adds_time_to_the_episode_under_the_cards_caps(world):
    e1 = world["e"][0]
    client = client_of("alice")
    response = client.post(url(e1, "episode_time"), {"ms": "15000"})
    assert response.json() == {"added_ms": 15000, "active_ms": 15000}
    # a second report at once cannot carry more than the wall time since the first
    refused = client.post(url(e1, "episode_time"), {"ms": "30000"})
    assert (
        refused.status_code == 400
        and "since your last report on this episode" in (refused.json()["error"])
    )
    EpisodeTime.objects.update(updated_at=timezone.now() - timedelta(seconds=40))
    assert client.post(url(e1, "episode_time"), {"ms": "30000"}).json()["active_ms"] == 45000
    for bad, said in (("", "ms: missing"), ("1.5", "not a whole number"), ("0", "more than 0")):
        response = client.post(url(e1, "episode_time"), {"ms": bad})
        assert response.status_code == 400 and said in response.json()["error"]
    assert client.post(url(e1, "episode_time"), {"ms": "999999"}).status_code == 400
    # only its annotators: a moderator or lead reading it has no clock, another group 404
    assert client_of("mod").post(url(e1, "episode_time"), {"ms": "10"}).status_code == 403
    assert client_of("carl").post(url(e1, "episode_time"), {"ms": "10"}).status_code == 404
    assert EpisodeTime.objects.get().active_ms == 45000
    assert not CardTime.objects.exists()  # the cards' times (and their figures) untouched
    # the card names its clock's URL to its annotators only
    assert f'data-time-url="{url(e1, "episode_time")}"' in client.get(url(e1)).content.decode()
    assert "data-time-url" not in client_of("mod").get(url(e1)).content.decode()


def _cells(page: str, table: str) -> list[list[str]]:
    """The text of each body row's cells of the table `data-table="table"`."""
    body = page[page.index(f'data-table="{table}"') :].split("</table>")[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)[1:]
    cell = re.compile(r"<t[hd][^>]*>(.*?)</t[hd]>", flags=re.S)
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in cell.findall(r)] for r in rows]


def test_the_time_page_shows_each_annotator_and_each_episodes_median(world):
    e1, e2, _ = world["e"]
    times = {("alice", e1): 10_000, ("bob", e1): 21_000, ("alice", e2): 30_000}
    for (who, e), ms in times.items():
        EpisodeTime.objects.create(episode=e, annotator=world[who], active_ms=ms)
    compute_times(world["study"])  # the lead's "Compute": the kept tables
    page = client_of("lead").get(reverse("lead_card_times", args=["ag"])).content.decode()
    assert "Time per episode" in page
    per_annotator = _cells(page, "episode-annotator")
    assert per_annotator == [["alice", "2", "20.0 s", "28.0 s"], ["bob", "1", "21.0 s", "21.0 s"]]
    per_episode = _cells(page, "episode")
    key = e1.conversation.key
    assert per_episode == [
        [f"episode {e1.pk}", key, "1–2 of 4", "gpt", "2", "15.5 s", "19.9 s"],
        [f"episode {e2.pk}", key, "2–3 of 4", "gpt", "1", "30.0 s", "30.0 s"],
    ]


def _queries(client, url: str) -> int:
    client.get(url)  # warm: the session, the caches
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    control = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT", "ROLLBACK")
    return sum(1 for q in ctx.captured_queries if not q["sql"].lstrip().startswith(control))


def test_the_leads_pages_cost_the_same_queries_for_3_or_30_episodes(world):
    """No query per episode: the time page and the flags page, for a lead who judges the
    episodes too (the blind rule's replay is in it)."""
    alice, bob, study = world["alice"], world["bob"], world["study"]
    study.memberships.filter(user=alice).update(role=Role.LEAD)
    conversation, run = world["e"][0].conversation, world["e"][0].run
    client = client_of("alice")
    pages = [reverse("lead_card_times", args=["ag"]), reverse("lead_flags", args=["ag"])]
    costs = []
    for n in (3, 30):
        Episode.objects.all().delete()
        for i in range(n):
            e = Episode.objects.create(
                conversation=conversation, run=run, first_turn=1, last_turn=2
            )
            for who, ms in ((alice, 1000 + i), (bob, 2000 + i)):
                EpisodeTime.objects.create(episode=e, annotator=who, active_ms=ms)
                EpisodeSkip.objects.create(episode=e, annotator=who, kind="flag", reason="r")
            if i % 2:
                judge("bob", e)
        costs.append([_queries(client, url) for url in pages])
    assert costs[0] == costs[1]


def test_the_time_page_from_kept_tables_costs_the_same_queries_for_3_or_30_episodes(world):
    """A lead who judges nothing reads the kept tables (a `times` job): the episodes'
    per-annotator table kept, the per-episode one read a page at a time; no query per
    episode, and none of their times read whole."""
    alice, bob, study = world["alice"], world["bob"], world["study"]
    conversation, run = world["e"][0].conversation, world["e"][0].run
    client, page = client_of("lead"), reverse("lead_card_times", args=["ag"])
    costs = []
    for n in (3, 30):
        Episode.objects.all().delete()
        for i in range(n):
            e = Episode.objects.create(
                conversation=conversation, run=run, first_turn=1, last_turn=2
            )
            for who, ms in ((alice, 1000 + i), (bob, 2000 + i)):
                EpisodeTime.objects.create(episode=e, annotator=who, active_ms=ms)
        compute_times(study)
        costs.append(_queries(client, page))
        html = client.get(page).content.decode()
        assert 'data-times="kept"' in html
        assert _cells(html, "episode-annotator")[0][:2] == ["alice", str(n)]
        assert len(_cells(html, "episode")) == n
    assert costs[0] == costs[1]
