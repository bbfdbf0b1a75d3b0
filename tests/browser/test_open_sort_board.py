"""The open sort's board in a browser (issue 11, done when): two experts open-sorted six cards
with free tags in the browser (the tag panel, by the keyboard); the lead merges and
renames the tags into two types by drag and drop and by keyboard, freezes after the
confirmation, the report shows the experts' kappa on the consolidated types, and each type
lists its source tags. Every key the board names is pressed here."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.agreement.render import fmt
from annotation.models import Annotation, BoardType, FreeTag, Job, JobStatus, TagSet
from annotation.tasks import run_agreement
from tests.browser.a11y import assert_no_serious_violations
from tests.browser.pages import htmx_ready, log_in, wait_for_card
from tests.browser.test_key_hints import hints
from tests.browser.test_open_sort_tagging import add_by_keys, pick_by_keys
from tests.opensort.board_factories import SIX_CARDS, make_open_sort

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOARD_HINTS = {
    "kbd:u",
    "title:Undo (u)",
    "kbd:y",
    "title:Redo (y)",
    "text:Keys: on a focused tag, m move it to a type, r rename it, g merge it into another "
    "tag; anywhere outside a text box, u undo, y redo. Or drag a tag onto a type (or one of the "
    "types in the bar that stays at the top), onto “Tags without a type”, or onto another tag "
    "to merge. Every change is saved at once.",
}


@pytest.fixture
def world(study, browser, live_server):
    """The two experts tag the six cards in the browser, by the keyboard (the tag panel:
    a new tag typed, a tag of their own picked from the autocomplete, 0 for none)."""
    w = make_open_sort(study)
    for column, expert in enumerate(w["experts"]):
        tags = [row[column] for row in SIX_CARDS]
        tag_in_browser(browser, live_server, study, expert, w["turns"], tags)
    return w


def tag_in_browser(browser, live_server, study, expert, turns, tags) -> None:
    context, page, errors = log_in(browser, live_server, expert.username)
    page.goto(f"{live_server.url}/s/{study.slug}/queue/")
    wait_for_card(page, turns[0])
    used: set[str] = set()
    for turn, names in zip(turns, tags, strict=True):
        wait_for_card(page, turn)
        for name in names:
            if name in used:
                pick_by_keys(page, name[:4], name)
            else:
                add_by_keys(page, name)
                used.add(name)
        page.keyboard.press("Escape" if names else "0")  # leave the tag box / no smell
        page.keyboard.press("Enter")
        # the next card, or after the last one the page that says all are done
        page.wait_for_function(
            "id => document.querySelector('#card')?.dataset.turnId !== String(id)", arg=turn.pk
        )
    context.close()
    assert errors == []
    stored = {
        ts.turn_id: sorted(t.name for t in ts.tags.all())
        for ts in TagSet.objects.filter(annotator=expert).prefetch_related("tags")
    }
    assert stored == {turn.pk: sorted(names) for turn, names in zip(turns, tags, strict=True)}


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The agreement job the freeze starts: the test runs it (no worker here)."""
    jobs: list[int] = []
    monkeypatch.setattr(run_agreement, "delay", jobs.append)
    return jobs


@pytest.fixture
def lead_page(browser, live_server, study, world):
    _context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/{study.slug}/lead/board/")
    ready(page)
    yield page
    assert errors == []


def ready(page) -> None:
    page.wait_for_selector("#board")
    page.wait_for_load_state("load")
    htmx_ready(page, "#board form")


def saved(page, text: str) -> None:
    """The board came back saying it saved `text` (and htmx wired its forms again)."""
    page.wait_for_function(
        "t => document.querySelector('#board [role=status]')?.textContent.includes(t)", arg=text
    )
    htmx_ready(page, "#board form")


def tag(name: str) -> FreeTag:
    return FreeTag.objects.get(name=name)


def tag_el(page, name: str):
    return page.locator(f"#tag-{tag(name).pk}")


def drag(source, target) -> None:
    """Drag by the tag's name (its top left corner), not by one of its form fields."""
    source.drag_to(target, source_position={"x": 12, "y": 10}, target_position={"x": 8, "y": 6})


def create_type(page, name: str, category: str) -> None:
    page.locator("#new-type summary").click()
    page.locator("#new-type input[name=name]").fill(name)
    page.locator("#new-type input[name=category]").fill(category)
    page.locator("#new-type input[name=category]").press("Enter")
    saved(page, f"Created type '{name}'")


def test_the_board_shows_exactly_the_hints_tested_here(lead_page):
    assert hints(lead_page) == BOARD_HINTS
    assert_no_serious_violations(lead_page, "the open sort board")


def test_the_lead_consolidates_by_mouse_and_keyboard_freezes_and_reports(
    lead_page, live_server, study, world, queued
):
    page = lead_page
    create_type(page, "Ambiguous ask", "Intent")
    create_type(page, "Constraint broken", "Compliance")
    ambiguous, broken = (
        BoardType.objects.get(name=n) for n in ("Ambiguous ask", "Constraint broken")
    )

    # drag and drop: alice's "vague ask" onto bob's "unclear request" merges them; the merged
    # tag onto the type groups it
    drag(tag_el(page, "vague ask"), tag_el(page, "unclear request"))
    saved(page, "Merged 'vague ask' into 'unclear request'")
    assert tag("vague ask").merged_into == tag("unclear request")
    drag(tag_el(page, "unclear request"), page.locator(f"#drop-type-{ambiguous.pk}"))
    saved(page, "Put 'unclear request' under type 'Ambiguous ask'")
    assert tag("unclear request").board_type == ambiguous

    # the keyboard: g merges, m moves to a type, r renames (each on the focused tag)
    tag_el(page, "ignored rule").focus()
    page.keyboard.press("g")
    assert page.evaluate("document.activeElement.name") == "target"
    page.keyboard.type("broke constraint")
    page.keyboard.press("Enter")
    saved(page, "Merged 'ignored rule' into 'broke constraint'")
    tag_el(page, "broke constraint").focus()
    page.keyboard.press("m")
    assert page.evaluate("document.activeElement.name") == "type"
    page.keyboard.type("Compliance")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    saved(page, "Put 'broke constraint' under type 'Constraint broken'")
    assert tag("broke constraint").board_type == broken
    # the focus stays on the tag it was on, in its new place
    assert page.evaluate("document.activeElement.id") == f"tag-{tag('broke constraint').pk}"
    tag_el(page, "unclear request").focus()
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type("Ambiguous ask")
    page.keyboard.press("Enter")
    saved(page, "Renamed tag 'unclear request' to 'Ambiguous ask'")
    assert tag("unclear request").board_name == "Ambiguous ask"

    # u undoes the rename, y does it again (outside a text box)
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("u")
    saved(page, "Undone: Renamed tag")
    assert tag("unclear request").board_name == ""
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("y")
    saved(page, "Redone: Renamed tag")
    assert tag("unclear request").board_name == "Ambiguous ask"

    # the freeze, after a confirmation that says what will happen
    page.get_by_role("link", name="Freeze into a taxonomy version…").click()
    plan = page.locator("#freeze-plan").inner_text()
    assert "2 types in 2 categories" in plan
    assert "12 tag sets become round-1 labels of alice, bob" in plan
    assert not Annotation.objects.exists()
    page.get_by_role("button", name="Freeze:").click()
    page.wait_for_url(f"{live_server.url}/s/s1/lead/board/types/")
    assert Annotation.objects.filter(round=1).count() == 12

    # each type lists its source tags
    ambiguous_rows = page.locator("#provenance-ambiguous_ask tr.source-tag").all_inner_texts()
    assert sorted(r.split("\t")[1:3] for r in ambiguous_rows) == [
        ["unclear request", "bob"],
        ["vague ask", "alice"],
    ]
    broken_rows = page.locator("#provenance-constraint_broken tr.source-tag").all_inner_texts()
    assert sorted(r.split("\t")[1:3] for r in broken_rows) == [
        ["broke constraint", "bob"],
        ["ignored rule", "alice"],
    ]

    # the report: the agreement job the freeze started (run here, as a worker would) gives
    # the experts' kappa on the consolidated types, scikit-learn's on their labels
    assert len(queued) == 1
    run_agreement.apply(args=[queued[0]])
    job = Job.objects.get(pk=queued[0])
    assert job.status == JobStatus.DONE, job.error
    alice, bob = world["experts"]
    sets = {
        who: [
            ",".join(sorted(a.codes))
            for a in Annotation.objects.filter(annotator=who, round=1).order_by("turn__index")
        ]
        for who in (alice, bob)
    }
    kappa = job.result["axes"]["type"]["report"]["groups"]["experts"]["cohen_kappa"]
    assert abs(kappa - cohen_kappa_score(sets[alice], sets[bob])) < 1e-9
    page.goto(f"{live_server.url}/s/s1/report/")
    assert fmt(kappa) in page.locator(".kappa-groups").inner_text()
