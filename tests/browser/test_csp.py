"""The pages meet their Content-Security-Policy (issue 12): every kind of page, visited as
the user it is for, answers with the policy's header and the browser reports no
`securitypolicyviolation` (no inline script, event handler or style, no eval, nothing from
another site), including what htmx swaps in and the card's keys."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Job, JobKind, JobStatus
from tests.browser.pages import htmx_ready, wait_for_card
from tests.browser.test_open_sort_tagging import pick_by_keys
from tests.factories import PASSWORD, label, make_conversation, make_group, make_user
from tests.opensort.board_factories import make_open_sort, tag_six_cards

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# every violation the page's document sees, sent to the test before the page can hide it
WATCH = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolation(`${e.effectiveDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber} ${e.sample}`);
}, true);
"""


class Visitor:
    """A logged-in browser context that counts policy violations on every page it opens."""

    def __init__(self, browser, live_server, username: str | None):
        self.base = live_server.url
        self.context = browser.new_context()
        self.context.set_default_timeout(15_000)
        self.violations: list[str] = []
        self.context.expose_binding(
            "__cspViolation", lambda source, text: self.violations.append(text)
        )
        self.context.add_init_script(WATCH)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        if username:
            self.visit(reverse("login"))
            self.page.fill('input[name="username"]', username)
            self.page.fill('input[name="password"]', PASSWORD)
            self.page.get_by_role("button", name="Log in").click()
            self.page.wait_for_url(f"{self.base}/")

    def visit(self, path: str, ready: str | None = None) -> None:
        response = self.page.goto(f"{self.base}{path}")
        assert response.status == 200, (path, response.status)
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, (path, policy)
        if ready:
            htmx_ready(self.page, ready)
        self.page.wait_for_load_state("networkidle")
        self.check(path)

    def check(self, where: str) -> None:
        assert self.violations == [], where
        assert self.errors == [], where


@pytest.fixture
def closed_sort(study, lead, alice, bob):
    """Two escalated cards of alice and bob (no discussion round), their moderator, a job."""
    study.discussion_rounds = 0
    study.save()
    moderator = make_user("moderator")
    group = make_group(study, "g", [alice, bob], moderator=moderator)
    conversation = make_conversation(study, "c1", n_turns=3, group=group)
    turns = list(conversation.turns.order_by("index"))
    for turn in turns[:2]:
        label(turn, alice, "code_rollback", note="a note", evidence="an evidence quote")
        label(turn, bob)
    job = Job.objects.create(
        study=study,
        kind=JobKind.EXPORT,
        status=JobStatus.FAILED,
        error="no worker",
        params={"round": 1, "format": "csv"},
        created_at=timezone.now() - timedelta(minutes=3),
    )
    return {"study": study, "turns": turns, "conversation": conversation, "job": job}


def test_the_annotators_pages_meet_the_policy(browser, live_server, closed_sort):
    slug, turns = closed_sort["study"].slug, closed_sort["turns"]
    alice = Visitor(browser, live_server, "alice")
    alice.check("home")
    alice.visit(reverse("study", args=[slug]))
    alice.visit(reverse("my_cards", args=[slug]))
    # the card: its keys, the proposal box's keys, the earlier turns and the next card by htmx
    alice.visit(reverse("card", args=[slug, turns[2].pk]))
    wait_for_card(alice.page, turns[2])
    alice.page.click("#propose summary")
    alice.page.fill("#propose input[name=name]", "A type")
    alice.page.keyboard.press("Escape")
    alice.check("the proposal box")
    alice.visit(reverse("discussion", args=[slug, turns[0].pk]))
    alice.visit(reverse("discuss_queue", args=[slug]))
    alice.visit(reverse("split_queue", args=[slug]))
    alice.context.close()


def test_the_moderators_pages_meet_the_policy(browser, live_server, closed_sort):
    slug, turns = closed_sort["study"].slug, closed_sort["turns"]
    moderator = Visitor(browser, live_server, "moderator")
    moderator.visit(reverse("moderate_queue", args=[slug]))
    moderator.visit(reverse("discussion", args=[slug, turns[0].pk]), ready="#decide")
    moderator.page.fill("#decide textarea[name=rationale]", "It rolls back the fix.")
    moderator.page.evaluate("document.activeElement?.blur()")
    moderator.page.keyboard.press("Control+Enter")  # a decision with nothing ticked: refused
    moderator.page.wait_for_load_state("networkidle")
    moderator.check("the moderator's decision")
    moderator.context.close()


def test_the_leads_pages_meet_the_policy(browser, live_server, closed_sort):
    study, job = closed_sort["study"], closed_sort["job"]
    slug = study.slug
    lead = Visitor(browser, live_server, "lead")
    lead.visit(reverse("study", args=[slug]), ready="#jobs-panel form.jobs-filter")
    # (importing, assigning and the jobs list are forms and panels of these pages)
    for name in (
        "lead_conversations",
        "lead_browse",
        "lead_filter",
        "lead_groups",
        "lead_gold",
        "lead_card_times",
        "lead_flags",
        "lead_split_check",
        "lead_splitting",
        "lead_sample",
        "proposals",
        "taxonomy",
        "report",
        "report_methods",
    ):
        lead.visit(reverse(name, args=[slug]))
    lead.visit(reverse("lead_conversation", args=[slug, closed_sort["conversation"].pk]))
    lead.visit(reverse("job_detail", args=[slug, job.pk]))
    lead.visit(reverse("api-docs"))
    lead.page.wait_for_selector("#swagger-ui .information-container")
    lead.check("the API docs")
    lead.context.close()


def test_the_open_sorts_pages_meet_the_policy(browser, live_server, study):
    world = make_open_sort(study)
    tag_six_cards(world)
    slug, turns = study.slug, world["turns"]
    alice = Visitor(browser, live_server, "alice")
    alice.visit(reverse("card", args=[slug, turns[0].pk]))
    wait_for_card(alice.page, turns[0])
    pick_by_keys(alice.page, "vag", "vague ask")  # the tag box's suggestions, by htmx
    alice.check("the tag box")
    alice.context.close()
    lead = Visitor(browser, live_server, "lead")
    for name in ("board", "provenance", "board_analytics", "board_freeze"):
        lead.visit(reverse(name, args=[slug]))
    lead.context.close()


def test_the_login_and_lockout_pages_meet_the_policy(browser, live_server, alice, settings):
    settings.AXES_FAILURE_LIMIT = 2
    anonymous = Visitor(browser, live_server, None)
    anonymous.visit(reverse("login"))
    for _ in range(2):
        anonymous.page.fill('input[name="username"]', "alice")
        anonymous.page.fill('input[name="password"]', "wrong")
        anonymous.page.get_by_role("button", name="Log in").click()
        anonymous.page.wait_for_load_state("networkidle")
    assert "Try again in 15 minutes" in anonymous.page.inner_text("main")
    anonymous.check("the lockout page")
    anonymous.context.close()
