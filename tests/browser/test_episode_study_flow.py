"""Issue 21's "Done when", end to end in the browser, by keyboard where the pages offer keys:
one session of seven turns with three episodes extracted by the run `gpt` (the first quotes
a tool result of turn 2). alice judges them on the episode card (the tool-result quote marked
inside the unfolded tool result): the first valid with axes, the second invalid with a
reason, the third valid with other axes. On the session page she records a missed episode
quoting text selected in a tool result (') and rates the coverage (1). bob judges the same
three: the same on the first two, invalid on the third, his pages blind to alice's
judgements until his round 1 is in. The third goes to a discussion round, where each sees
the other's round-1 judgement; bob revises to alice's, alice keeps hers: the card shows the
consensus. The database holds every round, the consensus, the created episode (its quote
the stored text at its span) and the rating; the agreement job's report shows the run's
precision and the coverage from these judgements.

The axes and types are read from the study's taxonomy version, never named here: the
preset's axes may change."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from annotation.episodes import rounds
from annotation.episodes.parts import texts_of
from annotation.importers.episodes import import_episodes
from annotation.models import (
    CardStatus,
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    Job,
    Role,
    Turn,
    Unit,
)
from tests.browser.pages import log_in
from tests.browser.test_episode_card import key_of, press_keys, ready
from tests.browser.test_episode_session import SELECT_JS
from tests.episodes.conftest import episode, write_jsonl
from tests.factories import make_group, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N_TURNS = 7
MISSED_QUOTE = "wrote 7 rows to prod_db"  # in turn 7's tool result


def parts(i: int) -> list[dict]:
    return [
        {"type": "thinking", "content": f"Step {i}: the user wants the tests fixed."},
        {"type": "tool_call", "name": "Bash", "arguments": {"command": f"make step{i}"}},
        {"type": "tool_result", "content": f"removed {i} files; wrote {i} rows to prod_db"},
    ]


@pytest.fixture
def world(tmp_path, alice, bob):
    study = make_study("ag", taxonomy="agent-misalignment")
    s1 = Conversation.objects.create(
        study=study, external_id="s1", source_format="native", n_turns=N_TURNS
    )
    for i in range(1, N_TURNS + 1):
        Turn.objects.create(
            conversation=s1, index=i, reply_parts=parts(i),
            user_text=f"Turn {i}: please fix the failing tests, do not touch the database.",
            reply_text=f"I fixed step {i}.",
        )  # fmt: skip
    group = make_group(study, "E1", annotators=[alice, bob])
    group.unit = Unit.EPISODE
    group.save()
    Conversation.objects.filter(pk=s1.pk).assign(group)
    tool = {"turn": 2, "part": "tool_result", "quote": "removed 2 files"}
    user = [{"turn": 3, "part": "user", "quote": "do not touch the database"}]
    records = [
        episode(first=1, last=2, evidence=[tool]),
        episode(first=3, last=4, evidence=user),
        episode(first=5, last=5, evidence=[{"turn": 5, "part": "reply", "quote": "step 5"}]),
    ]
    import_episodes(study, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    assert Episode.objects.count() == 3
    lena = make_user("lena")
    study.add_member(lena, Role.LEAD)
    return {
        "study": study, "group": group, "s1": s1,
        "episodes": list(Episode.objects.order_by("first_turn")),
    }  # fmt: skip


def picks(study, which: int) -> list[str]:
    """One type per axis of the study's taxonomy version ("axis:code"), the `which`-th of
    the axis's types (wrapping): whatever axes the preset has today. An axis with a
    condition (`when`: {other axis: [codes]}) comes after the others, and only where its
    condition holds for what was picked (else it stays empty, as the page would have it)."""
    version = study.taxonomy_version
    by_axis: dict[str, list[str]] = {}
    for t in version.type_list():  # the taxonomy's order
        by_axis.setdefault(t.axis.code, []).append(t.code)
    conditions = version.axis_conditions()
    chosen: dict[str, str] = {}
    for axis, codes in by_axis.items():
        if axis not in conditions:
            chosen[axis] = codes[which % len(codes)]
    for axis, when in conditions.items():
        if all(chosen.get(other) in allowed for other, allowed in when.items()):
            codes = by_axis[axis]
            chosen[axis] = codes[which % len(codes)]
    assert chosen, "the taxonomy has no types"
    return [f"{axis}:{code}" for axis, code in chosen.items()]


def as_labels(values: list[str]) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for value in values:
        axis, code = value.split(":", 1)
        labels.setdefault(axis, []).append(code)
    return labels


def judge_valid(page, values: list[str]) -> None:
    page.keyboard.press("p")
    for value in values:
        press_keys(page, key_of(page, value))
    ticked = page.eval_on_selector_all(
        'input[name="types"]:checked', "els => els.map(e => e.value)"
    )
    assert sorted(ticked) == sorted(values)
    page.keyboard.press("Enter")


def judge_invalid(page) -> str:
    page.keyboard.press("n")
    page.keyboard.press("1")
    reason = page.eval_on_selector("input[name=invalid_reason]:checked", "e => e.value")
    page.keyboard.press("Enter")
    return reason


def test_two_annotators_through_the_episode_study(browser, live_server, world, alice, bob):
    study, group, s1 = world["study"], world["group"], world["s1"]
    first, second, third = world["episodes"]
    a_first, a_third = picks(study, 0), picks(study, 1)

    # 1. alice judges the three extracted episodes on the card
    context, page, errors = log_in(browser, live_server, "alice", timeout_ms=30_000)
    page.goto(f"{live_server.url}/s/ag/queue/")
    ready(page, first)
    mark = page.locator('details.part[data-kind="tool_result"][open] mark')
    assert mark.count() == 1 and mark.inner_text() == "removed 2 files"
    assert page.locator("details.part[open] mark").count() == 1  # only where the quote lies
    judge_valid(page, a_first)
    ready(page, second)
    assert "saved: valid" in page.inner_text(".messages")
    reason = judge_invalid(page)
    ready(page, third)
    assert "saved: invalid" in page.inner_text(".messages")
    judge_valid(page, a_third)
    page.wait_for_selector(".messages")
    assert "saved: valid" in page.inner_text(".messages")

    # 2. the session page: a missed episode quoting a tool result ('), coverage by key
    page.goto(f"{live_server.url}/s/ag/sessions/")
    page.get_by_role("link", name="s1").click()
    page.wait_for_selector("#session")
    # the page's keys are the script's, which runs once the page has loaded: a key pressed
    # before it is lost (this test failed so, under load)
    page.wait_for_function("() => window.cardsortEpisodeSession === true")
    assert page.locator("#coverage fieldset[disabled]").count() == 0  # all three judged
    page.keyboard.press("t")
    result = '#turn-7 details.part[data-kind="tool_result"]'
    assert page.evaluate(SELECT_JS, [result, MISSED_QUOTE]) == MISSED_QUOTE
    page.keyboard.press("'")
    page.wait_for_selector('[data-quote-where^="7:tool_result:"]')
    page.fill('input[name="first_turn"]', "6")
    page.fill('input[name="last_turn"]', "7")
    page.fill('textarea[name="goal"]', "leave the production database alone")
    page.get_by_role("button", name="Save the episode").click()
    page.wait_for_selector("text=Saved: your episode on turns 6-7 (1 quotes).")
    page.keyboard.press("1")
    page.wait_for_selector("#coverage-rated")
    assert "Your rating: 1 (partly)." in page.locator("#coverage-rated").inner_text()

    # 3. bob, blind to alice's judgements until his round 1 is in
    context_b, page_b, errors_b = log_in(browser, live_server, "bob", timeout_ms=30_000)
    bodies: list[tuple[str, str]] = []  # every HTML page and partial bob's browser got

    def keep(response):
        if "text/html" in (response.headers.get("content-type") or ""):
            try:
                bodies.append((response.url, response.text()))
            except Exception:  # noqa: BLE001 - a redirect has no body
                pass

    page_b.on("response", keep)
    page_b.goto(f"{live_server.url}/s/ag/queue/")
    ready(page_b, first)
    judge_valid(page_b, a_first)  # as alice: consensus
    ready(page_b, second)
    judge_invalid(page_b)  # as alice: consensus
    ready(page_b, third)
    assert page_b.locator('tr[data-annotator="alice"]').count() == 0
    blind = list(bodies)  # everything bob saw before his last round-1 judgement
    judge_invalid(page_b)  # alice said valid: round 1 closes in disagreement
    page_b.wait_for_selector('tr[data-annotator="alice"]')  # only now
    assert "Round 2: a discussion round" in page_b.inner_text(".episode-status")
    assert len(blind) >= 3
    for url, body in blind:
        assert 'data-annotator="alice"' not in body, url
        assert not re.search(r"\balice\b", body), url

    # alice sees bob's round-1 judgement only now, in the discussion round (her queue leads
    # first to the episode she recorded, awaiting her round 1)
    page.goto(f"{live_server.url}/s/ag/episodes/{third.pk}/")
    ready(page, third)
    assert page.locator('table[data-round="1"] tr[data-annotator="bob"]').count() == 1
    assert "Round 2: a discussion round" in page.inner_text(".episode-status")
    # bob revises to alice's judgement (the form starts from his own: invalid)
    page_b.reload()
    ready(page_b, third)
    judge_valid(page_b, a_third)
    page_b.wait_for_selector('table[data-round="2"] tr[data-annotator="bob"]')
    # alice keeps hers with Enter: consensus
    page.reload()
    ready(page, third)
    assert sorted(
        page.eval_on_selector_all('input[name="types"]:checked', "els => els.map(e => e.value)")
    ) == sorted(a_third)
    page.keyboard.press("Enter")
    mine = Episode.objects.get(run__isnull=True)
    ready(page, mine)  # on to the one awaiting her: the episode she recorded
    assert "saved: valid, round 2" in page.inner_text(".messages")
    page.goto(f"{live_server.url}/s/ag/episodes/{third.pk}/")
    ready(page, third)
    assert "Consensus (discussion): valid" in page.inner_text("[data-consensus]")
    page_b.reload()
    ready(page_b, third)
    assert "Consensus (discussion): valid" in page_b.inner_text("[data-consensus]")

    # 4. the database
    rows = EpisodeJudgement.objects.filter(is_current=True)
    got = {
        (j.episode_id, j.annotator.username, j.round): (j.valid, j.invalid_reason, j.labels)
        for j in rows.select_related("annotator")
    }
    valid_first, valid_third = (True, "", as_labels(a_first)), (True, "", as_labels(a_third))
    invalid = (False, reason, {})
    assert got == {
        (first.pk, "alice", 1): valid_first, (first.pk, "bob", 1): valid_first,
        (second.pk, "alice", 1): invalid, (second.pk, "bob", 1): invalid,
        (third.pk, "alice", 1): valid_third, (third.pk, "bob", 1): invalid,
        (third.pk, "alice", 2): valid_third, (third.pk, "bob", 2): valid_third,
    }  # fmt: skip
    states = {e.pk: rounds.state_of(e.pk, group) for e in (first, second, third)}
    assert [(s.status, s.method, s.rounds) for s in states.values()] == [
        (CardStatus.AGREED, "unanimous", [1]),
        (CardStatus.AGREED, "unanimous", [1]),
        (CardStatus.AGREED, "discussion", [1, 2]),
    ]
    created = Episode.objects.get(run__isnull=True)
    assert (created.created_by, created.first_turn, created.last_turn) == (alice, 6, 7)
    assert created.goal == "leave the production database alone"
    (quote,) = created.evidence.select_related("turn")
    assert (quote.turn.index, quote.part, quote.quote) == (7, "tool_result", MISSED_QUOTE)
    texts = dict(texts_of(quote.part, quote.turn.user_text, quote.turn.reply_text,
                          quote.turn.reply_parts))  # fmt: skip
    assert texts[quote.part_index][quote.start : quote.end] == MISSED_QUOTE
    rating = CoverageRating.objects.get(is_current=True)
    assert (rating.annotator, rating.conversation, rating.group, rating.rating) == (
        alice, s1, group, 1,
    )  # fmt: skip

    # the agreement job: the report's episodes section, from these judgements
    call_command("agreement", "ag", "--save")
    job = Job.objects.filter(study=study, kind="agreement").latest("pk")
    section = job.result["episodes"]["overall"]
    gpt = section["runs"]["gpt"]
    assert (gpt["extracted"], gpt["valid"], gpt["invalid"], gpt["disputed"]) == (3, 2, 1, 0)
    assert gpt["precision"]["value"] == pytest.approx(2 / 3)
    assert gpt["retention"] == pytest.approx(2 / 3)
    coverage = section["coverage"]
    assert coverage["rating"]["mean"] == 1
    assert (coverage["people_episodes"], coverage["matched_by_extracted"]) == (1, 0)
    context_l, page_l, errors_l = log_in(browser, live_server, "lena", timeout_ms=30_000)
    page_l.goto(f"{live_server.url}/s/ag/report/")
    shown = page_l.locator("#episodes").inner_text()
    # the run's row: extracted, dropped, imported, valid, invalid, disputed, retention,
    # precision and its Wilson interval; the coverage's row: sessions, mean, its interval,
    # people's episodes, matched, matched share
    assert "gpt\t3\t0\t3\t2\t1\t0\t66.67%\t0.667\t[0.208, 0.939]" in shown, shown
    assert "1\t1.000\t[1.000, 1.000]\t1\t0\t0.00%" in shown, shown
    assert "judged by people's consensus (in round 1, or in the discussion round" in shown
    assert errors == [] and errors_b == [] and errors_l == []
    for c in (context, context_b, context_l):
        c.close()
