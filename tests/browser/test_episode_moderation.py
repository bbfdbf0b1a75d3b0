"""The moderation and discussion of episodes in the browser (issue 21), by keyboard, every
hint the moderator's form and the thread show: in the discussion round alice writes a
comment and sends it with Ctrl+Enter (the thread comes back in place); both episodes end
escalated; the moderator's queue (its Episodes tab) leads to the first, where p shows the
axes, a type's key ticks it, Enter with the rationale empty goes to the rationale, typing
and Ctrl+Enter decide, and the next escalated episode comes; there n shows the reasons, 1
picks the first (4, 3, 2 the others), the rationale is typed, Escape leaves it and Enter decides. alice then
reads the decision on her card."""

from __future__ import annotations

import pytest

from annotation.actions.episode_judgements import Posted, submit
from annotation.importers.episodes import import_episodes
from annotation.models import Conversation, Episode, EpisodeComment, EpisodeDecision, Turn, Unit
from tests.browser.a11y import axe_violations
from tests.browser.pages import log_in
from tests.episodes.conftest import PARTS, episode, write_jsonl
from tests.factories import make_group, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VALID, INVALID = Posted(True, "", {}), Posted(False, "other", {})
HINT = (
    "Keys: p valid, n invalid; then 1–4 the reason, or the key beside a type; Enter decides, "
    "or goes to the rationale while it is empty; in the rationale Ctrl+Enter decides and "
    "Escape leaves it."
)


@pytest.fixture
def world(tmp_path, alice, bob):
    study = make_study("ag", taxonomy="agent-misalignment")
    conversation = Conversation.objects.create(
        study=study, external_id="s1", source_format="native", n_turns=4
    )
    for i in range(1, 5):
        Turn.objects.create(
            conversation=conversation, index=i, reply_parts=PARTS,
            user_text=f"Turn {i}: please fix the failing tests, do not touch the API.",
            reply_text=f"I **changed** the API\n\nof module {i}.",
        )  # fmt: skip
    mod = make_user("mod")
    group = make_group(study, "E1", annotators=[alice, bob], moderator=mod)
    group.unit = Unit.EPISODE
    group.save()
    Conversation.objects.filter(pk=conversation.pk).assign(group)
    records = [episode(first=1, last=2), episode(first=3, last=4)]
    import_episodes(study, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    episodes = list(Episode.objects.order_by("first_turn"))
    for e in episodes:  # round 1 differs: discussion round 2
        submit(e, group, alice, 1, VALID)
        submit(e, group, bob, 1, INVALID)
    return {"group": group, "episodes": episodes, "alice": alice, "bob": bob}


def ready(page, episode) -> None:
    page.wait_for_function(
        "id => document.querySelector('#episode')?.dataset.episodeId === String(id)",
        arg=episode.pk,
    )
    page.wait_for_load_state("load")


def focused(page) -> str:
    return page.evaluate("() => document.activeElement?.name || document.activeElement?.tagName")


def test_annotators_discuss_and_the_moderator_decides_escalated_episodes_by_keyboard(
    browser, live_server, world
):
    first, second = world["episodes"]
    group = world["group"]

    # alice, in the discussion round: the thread, a comment sent with Ctrl+Enter
    context, page, errors = log_in(browser, live_server, "alice", timeout_ms=30_000)
    page.goto(f"{live_server.url}/s/ag/episodes/{first.pk}/")
    ready(page, first)
    assert "Ctrl+Enter" in page.inner_text("#episode-thread button[type=submit] kbd")
    page.click("#episode-thread textarea[name=text]")
    page.keyboard.type("The quote shows the API changed.")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#episode-thread .comment[data-author='alice']")
    assert "Comment sent (round 2)." in page.inner_text("#episode-thread")
    assert page.url.endswith(f"/episodes/{first.pk}/")  # the thread came back in place
    assert EpisodeComment.objects.get().text == "The quote shows the API changed."

    for e in (first, second):  # round 2 differs too: escalated
        submit(e, group, world["alice"], 2, VALID)
        submit(e, group, world["bob"], 2, INVALID)

    # the moderator: the queue's Episodes tab, then the first escalated episode
    context_m, page_m, errors_m = log_in(browser, live_server, "mod", timeout_ms=30_000)
    page_m.goto(f"{live_server.url}/s/ag/moderate/")
    page_m.click("nav.tabs >> text=Episodes")
    page_m.wait_for_selector("#episode-queue")
    assert page_m.locator("#episode-queue tr[data-status=escalated]").count() == 2
    page_m.click(f"#episode-queue tr[data-episode-id='{first.pk}'] a")
    ready(page_m, first)
    assert page_m.locator("tr[data-annotator]").count() == 4  # both rounds, both annotators
    assert "The quote shows the API changed." in page_m.inner_text("#episode-thread")
    assert page_m.inner_text("[data-decide-hints]") == HINT
    assert page_m.inner_text("#episode-decide button[type=submit] kbd") == "Ctrl+Enter"
    assert axe_violations(page_m) == []

    # p: the axes; a type's key ticks it; Enter with no rationale goes to the rationale
    assert not page_m.locator('#episode-decide [data-question="axes"]').is_visible()
    page_m.keyboard.press("p")
    assert page_m.locator('#episode-decide [data-question="axes"]').is_visible()
    types = page_m.eval_on_selector_all(
        '#episode-decide input[name="types"]', "els => els.map(e => e.value)"
    )
    symptom = next(v for v in types if v.startswith("symptom:"))
    box = page_m.locator(f'#episode-decide input[value="{symptom}"]')
    key = page_m.locator(f'label.type-toggle:has(input[value="{symptom}"]) kbd').inner_text()
    for k in key.lower().replace(" ", ""):
        page_m.keyboard.press(k)
    assert box.is_checked()
    page_m.keyboard.press("Enter")
    page_m.wait_for_function("() => document.activeElement?.name === 'rationale'")
    assert not EpisodeDecision.objects.exists()
    page_m.keyboard.type("The evidence supports it: the API was changed.")
    page_m.keyboard.press("Control+Enter")
    ready(page_m, second)  # decided: on to the next escalated episode
    assert "Episode decided: valid" in page_m.inner_text(".messages")
    decision = EpisodeDecision.objects.get(episode=first)
    assert decision.valid and decision.labels == {"symptom": [symptom.split(":")[1]]}

    # n: the reasons; 1 the first; the rationale typed, Escape leaves it, Enter decides
    page_m.keyboard.press("n")
    assert page_m.locator('#episode-decide [data-question="reason"]').is_visible()
    assert not page_m.locator('#episode-decide [data-question="axes"]').is_visible()
    reasons = page_m.eval_on_selector_all(
        '#episode-decide input[name="invalid_reason"]', "els => els.map(e => e.value)"
    )
    for key in "4321":  # each reason's key picks it
        page_m.keyboard.press(key)
        value = reasons[int(key) - 1]
        assert page_m.is_checked(f'#episode-decide input[name="invalid_reason"][value="{value}"]')
    page_m.click("#episode-decide textarea[name=rationale]")
    page_m.keyboard.type("Nothing in the quotes shows it.")
    page_m.keyboard.press("Escape")
    assert focused(page_m) != "rationale"
    page_m.keyboard.press("Enter")
    page_m.wait_for_selector("[data-decision]")
    decision = EpisodeDecision.objects.get(episode=second)
    assert not decision.valid and decision.invalid_reason == "observational_blind_spot"
    assert "Decided by the group's moderator" in page_m.inner_text(".episode-status")

    # alice reads the decision on her card; the thread is closed
    page.goto(f"{live_server.url}/s/ag/episodes/{first.pk}/")
    ready(page, first)
    assert "The evidence supports it" in page.inner_text("[data-decision]")
    assert page.locator("#episode-thread textarea").count() == 0
    assert errors == [] and errors_m == []
    context.close()
    context_m.close()
