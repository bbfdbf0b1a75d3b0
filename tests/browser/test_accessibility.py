"""Every page, as its users see it, has no serious or critical accessibility violation
(axe-core, tests/browser/a11y.py), and the card works with the keyboard alone with a focus
ring that shows.

To check a new page, add one line to PAGES: its name, who opens it, its URL in the study
the `world` fixture builds, and what the user does first (press a key, open a panel); add
to `world` what the page needs to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from django.utils import timezone

from annotation.agreement.data import compute_study_report
from annotation.models import (
    CardSkip,
    CardTime,
    Comment,
    Conversation,
    Job,
    JobKind,
    JobStatus,
    Kind,
    Proposal,
    SkipKind,
    SplitProposal,
)
from tests.browser.a11y import assert_no_serious_violations, focused, tab_through
from tests.browser.pages import htmx_ready, key_of, wait_for_card
from tests.factories import PASSWORD, label, make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AMBIGUOUS, OMISSION, ROLLBACK = "ambiguous_instruction", "must_do_omission", "code_rollback"


@pytest.fixture
def world(study, alice, bob, lead):
    """A study with something on every page: alice's open cards (one labelled, one with an
    earlier turn), a disputed card with a comment, an escalated card, an overlap card whose
    groups disagree (the study gold), proposals pending and decided, a done agreement job and
    an import job with rejected records, an export job waiting for a worker."""
    moderator = make_user("moderator")
    carol, dave = make_user("carol"), make_user("dave")
    a = make_group(study, "Students A", [alice, bob], moderator=moderator)
    b = make_group(study, "Experts B", [carol, dave], kind=Kind.EXPERT)
    cards = list(make_conversation(study, "c1", n_turns=3, group=a).turns.order_by("index"))
    label(cards[0], alice, ROLLBACK, note="rolled back the fix")
    disputed = make_conversation(study, "c2", n_turns=2, group=a).turns.get(index=2)
    label(disputed, alice, AMBIGUOUS, note="the request was vague", evidence="make it fast")
    label(disputed, bob, OMISSION, confidence=4)
    Comment.objects.create(turn=disputed, group=a, author=bob, round=2, text="Why ambiguous?")
    escalated = make_conversation(study, "c3", n_turns=1, group=a).turns.get()
    for round in (1, 2):
        label(escalated, alice, AMBIGUOUS, round=round)
        label(escalated, bob, OMISSION, round=round)
    shared = make_conversation(study, "c4", n_turns=1, group=a)
    Conversation.objects.filter(pk=shared.pk).assign(b)
    overlap = shared.turns.get()
    for user, code in ((alice, ROLLBACK), (bob, ROLLBACK), (carol, OMISSION), (dave, OMISSION)):
        label(overlap, user, code)
    add_proposals(study, lead, alice, bob, cards, disputed)
    agreement = add_jobs(study, lead)
    # a conversation to split (unassigned), with an LLM's split proposal
    topics = make_conversation(study, "c9", n_turns=3)
    SplitProposal.objects.create(conversation=topics, turn_index=2, reason="A new task.")
    CardSkip.objects.create(turn=cards[2], annotator=bob, kind=SkipKind.FLAG, reason="unclear")
    for turn, ms in ((cards[0], 41_000), (disputed, 75_000)):
        CardTime.objects.create(turn=turn, annotator=alice, active_ms=ms)
    return SimpleNamespace(
        study=study,
        cards=cards,
        disputed=disputed,
        escalated=escalated,
        overlap=overlap,
        agreement=agreement,
        bob=bob,
        topics=topics,
    )


def add_proposals(study, lead, alice, bob, cards, disputed) -> None:
    """alice's pending proposal and her rejected one, and bob's rejected one."""
    Proposal.propose(
        study=study,
        turn=cards[0],
        proposer=alice,
        name="Silent retry",
        definition="Retries without saying so.",
        reason="None is about retries.",
    )
    for user, turn, name in ((alice, cards[1], "Hedging"), (bob, disputed, "Overconfident")):
        proposal = Proposal.propose(
            study=study, turn=turn, proposer=user, name=name, definition="d", reason="none fits"
        )
        proposal.reject(lead, reason="Covered by an existing type.")


def add_jobs(study, lead) -> Job:
    """A done agreement job (returned), a done import with rejected records, and an export
    waiting for a worker."""
    Job.objects.create(
        study=study,
        kind=JobKind.IMPORT,
        status=JobStatus.DONE,
        created_by=lead,
        params={"files": [{"name": "chats.jsonl"}], "format": "native"},
        result={
            "conversations": 4,
            "turns": 7,
            "rejected": 1,
            "errors": ["chats.jsonl:3: not JSON"],
            "warnings": ["chats.jsonl:5: no reply"],
        },
        finished_at=timezone.now(),
    )
    Job.objects.create(
        study=study, kind=JobKind.EXPORT, created_by=lead, params={"format": "csv", "raw": False}
    )
    return Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        params={"round": 1},
        result=compute_study_report(study, n_boot=20),
        finished_at=timezone.now(),
    )


# --- what the user does on a page before it is checked ----------------------------------------


def press(*keys: str) -> Callable:
    def then(page, world) -> None:
        htmx_ready(page, "#card form")
        for key in keys:
            page.keyboard.press(key)

    return then


def tick_types(page, world) -> None:
    press(key_of(page, AMBIGUOUS), key_of(page, OMISSION))(page, world)


def open_context(page, world) -> None:
    htmx_ready(page, "#context button")
    page.keyboard.press("c")
    page.wait_for_selector("#context .context-turn")


def refused_submit(page, world) -> None:
    """Bob's label closes round 1 while alice's page is open: her change is refused."""
    label(world.cards[0], world.bob, OMISSION)
    press(key_of(page, AMBIGUOUS), "Enter")(page, world)
    page.wait_for_selector("#card .errorlist")


def wrong_password(page, world) -> None:
    page.fill('input[name="username"]', "alice")
    page.fill('input[name="password"]', "not her password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector(".error")


def open_diff(page, world) -> None:
    press("d")(page, world)
    page.wait_for_selector("#diff-panel:not([hidden]) table, #diff-panel:not([hidden]) pre")


def open_flag_box(page, world) -> None:
    press("f")(page, world)
    page.wait_for_selector("#flag-box[open] textarea")


def ask_to_split(page, world) -> None:
    page.get_by_role("button", name="Split before turn 3").click()
    page.wait_for_selector("#split-preview")


def open_proposal_box(page, world) -> None:
    page.get_by_text("None fits? Propose a new type").click()
    page.wait_for_selector("#propose input[name=name]")


def bad_invitation(page, world) -> None:
    """The lead pastes a list with a bad line: nobody is invited, the line is named."""
    page.fill("#id_people", "dana, dana@lab.org\nno email on this line")
    page.get_by_role("button", name="Invite").click()
    page.wait_for_selector("#invite-errors")


def invitation(used: bool) -> Callable:
    """The set-password link of a person the lead invited (`used`: they set it already)."""

    def url(w) -> str:
        from annotation.accounts.invitations import make_token

        lead = w.study.memberships.get(role="lead").user
        newbie = make_user("newbie")
        newbie.set_unusable_password()
        newbie.save()
        w.study.add_member(newbie)
        token = make_token(newbie, w.study, lead)
        if used:
            newbie.set_password(PASSWORD)
            newbie.save()
        return f"/accounts/invitation/{token}/"

    return url


# --- the pages ---------------------------------------------------------------------------------


def card(attr: str, index: int | None = None) -> Callable:
    def url(w) -> str:
        turn = getattr(w, attr) if index is None else getattr(w, attr)[index]
        return f"/s/s1/cards/{turn.pk}/"

    return url


@dataclass(frozen=True)
class Page:
    name: str
    user: str | None  # who opens it; None: nobody logged in
    url: Callable  # world -> path
    then: Callable | None = None  # (page, world): what the user does before the check

    def open(self, page, base: str, world) -> None:
        page.goto(base + self.url(world))
        page.wait_for_load_state("load")
        if page.locator("#card").count():
            page.wait_for_selector("#card[data-turn-id]")
        if self.then:
            self.then(page, world)


PAGES = [
    Page("login", None, lambda w: "/accounts/login/"),
    Page("password reset", None, lambda w: "/accounts/password-reset/"),
    Page("password reset sent", None, lambda w: "/accounts/password-reset/sent/"),
    Page("password reset link not valid", None, lambda w: "/accounts/reset/MQ/not-a-token/"),
    Page("invitation", None, invitation(used=False)),
    Page("invitation already used", None, invitation(used=True)),
    Page("members, lead", "lead", lambda w: "/s/s1/members/"),
    Page("members, a list with a bad line", "lead", lambda w: "/s/s1/members/", bad_invitation),
    Page("members, moderator", "moderator", lambda w: "/s/s1/members/"),
    Page("login refused", None, lambda w: "/accounts/login/", wrong_password),
    Page("home", "alice", lambda w: "/"),
    Page("study page, annotator", "alice", lambda w: "/s/s1/"),
    Page("study page, moderator", "moderator", lambda w: "/s/s1/"),
    Page("study page, lead", "lead", lambda w: "/s/s1/"),
    Page("all done", "carol", lambda w: "/s/s1/queue/"),
    Page("card with types ticked", "alice", card("cards", 1), tick_types),
    Page("card labelled before", "alice", card("cards", 0)),
    Page("card locked", "alice", card("disputed")),
    Page("card with the context open", "alice", card("cards", 2), open_context),
    Page("card with a refusal message", "alice", card("cards", 0), refused_submit),
    Page("card with the proposal box open", "alice", card("cards", 1), open_proposal_box),
    Page("card with the code diff open", "alice", card("cards", 2), open_diff),
    Page("card with the flag box open", "alice", card("cards", 1), open_flag_box),
    Page("my cards", "alice", lambda w: "/s/s1/cards/"),
    Page("my cards, filtered", "alice", lambda w: "/s/s1/cards/?state=disputed&q=c2"),
    Page("discussion, annotator", "alice", lambda w: f"/s/s1/cards/{w.disputed.pk}/discussion/"),
    Page("discussion, moderator", "moderator", lambda w: f"/s/s1/cards/{w.escalated.pk}/discussion/"),
    Page("discuss queue", "alice", lambda w: "/s/s1/discuss/"),
    Page("moderation queue", "moderator", lambda w: "/s/s1/moderate/"),
    Page("timeline", "alice", lambda w: f"/s/s1/cards/{w.disputed.pk}/timeline/"),
    Page("proposals queue", "lead", lambda w: "/s/s1/proposals/"),
    Page("report", "lead", lambda w: "/s/s1/report/"),
    Page("report: methods", "lead", lambda w: "/s/s1/report/methods/"),
    Page("lead: conversations", "lead", lambda w: "/s/s1/lead/conversations/"),
    Page("lead: groups", "lead", lambda w: "/s/s1/lead/groups/"),
    Page("lead: study gold", "lead", lambda w: "/s/s1/lead/gold/"),
    Page("lead: job detail", "lead", lambda w: f"/s/s1/jobs/{w.agreement.pk}/"),
    Page("lead: flagged cards", "lead", lambda w: "/s/s1/lead/flags/"),
    Page("lead: time per card", "lead", lambda w: "/s/s1/lead/time/"),
    Page("lead: sample size", "lead", lambda w: "/s/s1/lead/sample/"),
    Page("lead: conversation browser", "lead", lambda w: "/s/s1/lead/browse/?q=c2"),
    Page(
        "lead: one conversation",
        "lead",
        lambda w: f"/s/s1/lead/conversations/{w.disputed.conversation_id}/",
    ),
    Page("lead: a conversation to split", "lead", lambda w: f"/s/s1/lead/conversations/{w.topics.pk}/"),
    Page(
        "lead: split confirmation",
        "lead",
        lambda w: f"/s/s1/lead/conversations/{w.topics.pk}/",
        ask_to_split,
    ),
]  # fmt: skip


def log_in(browser, base: str, username: str | None):
    context = browser.new_context()
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    if username:
        page.goto(f"{base}/accounts/login/")
        page.fill('input[name="username"]', username)
        page.fill('input[name="password"]', PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{base}/")
    return context, page, errors


@pytest.mark.parametrize("spec", PAGES, ids=[p.name for p in PAGES])
def test_the_page_has_no_serious_accessibility_violation(browser, live_server, world, spec):
    context, page, errors = log_in(browser, live_server.url, spec.user)
    spec.open(page, live_server.url, world)
    assert_no_serious_violations(page, spec.name)
    # a title of its own, read first when the page opens and shown on its tab
    assert page.title() not in ("", "cardsort"), f"{spec.name}: no title of its own"
    # no template source shown as text (a multi-line {# #} comment is shown, not hidden)
    shown = page.inner_text("body")
    assert "{#" not in shown and "{%" not in shown, shown[:300]
    assert errors == []
    context.close()


# --- the keyboard ------------------------------------------------------------------------------


def test_tab_reaches_the_types_the_note_and_submit_with_a_visible_focus(
    browser, live_server, world
):
    context, page, errors = log_in(browser, live_server.url, "alice")
    turn = world.cards[1]
    page.goto(f"{live_server.url}/s/s1/cards/{turn.pk}/")
    wait_for_card(page, turn)
    reached = tab_through(page)
    names = {(r["tag"], r["name"]) for r in reached}
    n_types = page.locator("#card input[name=types]").count()
    assert n_types > 0
    assert len([r for r in reached if r["name"] == "types"]) == n_types
    assert {("input", "no_smell"), ("textarea", "note")} <= names
    assert any(r["tag"] == "button" and r["text"].startswith("Submit") for r in reached)
    hidden = [r for r in reached if not r["visible"]]
    assert hidden == [], f"focus not visible on: {hidden}"
    assert errors == []
    context.close()


def test_the_first_tab_offers_to_skip_to_the_content(browser, live_server, world):
    context, page, _ = log_in(browser, live_server.url, "alice")
    page.goto(f"{live_server.url}/s/s1/cards/{world.cards[1].pk}/")
    wait_for_card(page, world.cards[1])
    page.keyboard.press("Tab")
    first = focused(page)
    assert (first["tag"], first["text"], first["visible"]) == ("a", "Skip to content", True)
    page.keyboard.press("Enter")
    # the next Tab goes on from the content, past the header's links
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('main') !== null")
    context.close()
