"""Conversation text is hostile: a conversation whose id, system prompt, user text, reply and
reply parts hold script tags, event handlers, javascript: links, SVG, iframes and links and
images on another host is opened in Chromium on every page that shows conversation text.
On each: no script of the text runs (window.pwned stays undefined, no dialog opens), no
request leaves for another host, and the hostile text is there to read, as text.

PAGES is the list of those pages: (name, URL builder, then), `then` an optional step run
on the opened page (press c for the earlier turns). A new page showing conversation text
gets a line there."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from annotation.models import CardSkip, Conversation, Kind, Proposal, Role, SkipKind, Turn
from tests.browser.pages import htmx_ready, log_in
from tests.factories import label, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PWN = "window.pwned=1"
SCRIPT = f"<script>{PWN}</script>"
EVIL = "https://evil.example"
# the conversation's id comes from the file too, and most pages show it
HOSTILE_ID = f"<svg onload={PWN}>"
USER_TEXT = (
    f"{SCRIPT} please fix <img src=x onerror={PWN}> and [click me](javascript:{PWN}) or "
    f"[this](JaVaScRiPt:{PWN}) <iframe src={EVIL}/frame></iframe> ![pixel]({EVIL}/pixel.png) "
    f"[the docs]({EVIL}/docs) <link rel=prefetch href={EVIL}/prefetch>\n\n"
    f'<a href="javascript:{PWN}">raw link</a> <object data="{EVIL}/o"></object>'
)
REPLY_TEXT = (
    f"Sure.\n\n<svg onload={PWN}><circle r=5></svg>\n\n```html\n{SCRIPT}\n<img src=x onerror={PWN}>\n```"
    f"\n\n[safe](jav&#x09;ascript:{PWN}) <style>@import url({EVIL}/style.css);</style>\n\n"
    f"**<script>{PWN}</script>** <details open ontoggle={PWN}>x</details> [x](data:text/html,{SCRIPT})"
)
SYSTEM_PROMPT = f"You are helpful. {SCRIPT} <img src={EVIL}/system.png onerror={PWN}>"
REPLY_PARTS = [
    {
        "type": "tool_call",
        "name": SCRIPT,
        "arguments": json.dumps({"command": f"<img src=x onerror={PWN}>"}),
    },
    {
        "type": "tool_result",
        "name": f"<svg onload={PWN}>",
        "content": f"<svg onload={PWN}>\n{SCRIPT}",
    },
    {"type": "thinking", "thinking": f"{SCRIPT} [x](javascript:{PWN}) ![y]({EVIL}/think.png)"},
    {"type": f"<img src=x onerror={PWN}>", "content": f"<iframe src={EVIL}/part>"},
]


@dataclass
class World:
    slug: str
    first: Turn  # with the system prompt; its groups' consensus differ (the lead's gold)
    second: Turn  # disputed in group A: discussion, queues, timeline, a proposal


def card(w: World, turn: Turn) -> str:
    return f"/s/{w.slug}/cards/{turn.pk}/"


def show_code_diff(page) -> None:
    htmx_ready(page, "[data-diff]")
    page.keyboard.press("d")
    page.wait_for_selector("#diff-panel .diff-block")
    assert PWN in page.inner_text("#diff-panel"), "the diff shows the hostile code as text"


def show_earlier_turns(page) -> None:
    htmx_ready(page, "#context button")
    page.keyboard.press("c")
    page.wait_for_selector("#context .context-turn")


PAGES: list[tuple[str, Callable[[World], str], Callable | None]] = [
    ("card", lambda w: card(w, w.second), None),
    ("card with the system prompt", lambda w: card(w, w.first), None),
    ("card, earlier turns", lambda w: card(w, w.second), show_earlier_turns),
    ("discussion", lambda w: f"{card(w, w.second)}discussion/", None),
    ("discussion, earlier turns", lambda w: f"{card(w, w.second)}discussion/", show_earlier_turns),
    ("timeline", lambda w: f"{card(w, w.second)}timeline/", None),
    ("moderation queue", lambda w: f"/s/{w.slug}/moderate/", None),
    ("discuss queue", lambda w: f"/s/{w.slug}/discuss/", None),
    ("proposals", lambda w: f"/s/{w.slug}/proposals/", None),
    ("gold queue", lambda w: f"/s/{w.slug}/lead/gold/", None),
    ("card, code diff", lambda w: card(w, w.second), show_code_diff),
    ("my cards, searched", lambda w: f"/s/{w.slug}/cards/?q=please", None),
    ("lead: flagged cards", lambda w: f"/s/{w.slug}/lead/flags/", None),
    ("lead: conversation browser", lambda w: f"/s/{w.slug}/lead/browse/?q=please", None),
    (
        "lead: one conversation",
        lambda w: f"/s/{w.slug}/lead/conversations/{w.first.conversation_id}/",
        None,
    ),
]


@pytest.fixture
def world(study, lead) -> World:
    """The lead also annotates in group A, so one login opens every page. The conversation
    is shared by groups A and B: on turn 1 each group agrees, differently (the lead's gold
    queue); turn 2 is disputed in A and has a proposal."""
    bob, carol, dave = make_user("bob"), make_user("carol"), make_user("dave")
    a = make_group(study, "A", [lead, bob])
    b = make_group(study, "B", [carol, dave])
    study.add_member(make_user("moderator"), Role.MODERATOR, Kind.EXPERT)
    conversation = Conversation.objects.create(
        study=study,
        external_id=HOSTILE_ID,
        source_format="native",
        system_prompt=SYSTEM_PROMPT,
        n_turns=2,
    )
    for group in (a, b):
        Conversation.objects.filter(pk=conversation.pk).assign(group)
    first, second = Turn.objects.bulk_create(
        Turn(
            conversation=conversation,
            index=i,
            user_text=USER_TEXT,
            # turn 2's code is turn 1's plus a line: its diff shows the hostile code
            reply_text=REPLY_TEXT.replace("```html\n", "```html\n<p>again</p>\n" * (i - 1)),
            reply_parts=REPLY_PARTS,
            reply_missing=False,
        )
        for i in (1, 2)
    )
    for user, group in ((lead, a), (bob, a)):
        label(first, user, "code_rollback", group=group)
    for user, group in ((carol, b), (dave, b)):
        label(first, user, "must_do_omission", group=group)
    label(second, lead, "ambiguous_instruction", group=a)
    label(second, bob, "must_do_omission", group=a)
    Proposal.propose(
        study=study,
        turn=second,
        proposer=bob,
        name=SCRIPT,
        definition=f"<img src=x onerror={PWN}>",
        reason=f"[why](javascript:{PWN})",
    )
    CardSkip.objects.create(turn=second, annotator=bob, kind=SkipKind.FLAG, reason=SCRIPT)
    return World(slug=study.slug, first=first, second=second)


@pytest.fixture
def lead_page(browser, live_server, lead):
    context, page, errors = log_in(browser, live_server, "lead")
    yield page
    assert errors == []
    context.close()


SCRIPTS_AND_LINKS_JS = """() => {
  const bad = [];
  for (const el of document.querySelectorAll("*")) {
    for (const a of el.attributes) {
      const v = a.value.replace(/[\\s\\u0000-\\u001f]/g, "").toLowerCase();
      if (a.name.startsWith("on") && v.includes("pwned")) bad.push(el.tagName + " " + a.name);
      if (["href", "src", "srcdoc", "data", "action", "formaction", "xlink:href"].includes(a.name)
          && /^(javascript|data|vbscript):/.test(v)) bad.push(el.tagName + " " + a.name + "=" + v);
      if (["src", "srcdoc", "data"].includes(a.name) && v.includes("evil.example"))
        bad.push(el.tagName + " " + a.name + "=" + v);
    }
    if (["IFRAME", "OBJECT", "EMBED"].includes(el.tagName)) bad.push(el.tagName);
    if (el.tagName === "SCRIPT" && !(el.src || "").startsWith(location.origin + "/static/"))
      bad.push("SCRIPT " + (el.src || el.textContent.slice(0, 40)));
  }
  return bad;
}"""


def open_every_fold(page) -> None:
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")


@pytest.mark.parametrize("name, url, then", PAGES, ids=[p[0] for p in PAGES])
def test_hostile_conversation_text_never_runs_nor_loads(
    live_server, lead_page, world, name, url, then
):
    page = lead_page
    host = urlsplit(live_server.url).netloc
    dialogs: list[str] = []
    elsewhere: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on(
        "request",
        lambda r: elsewhere.append(r.url) if urlsplit(r.url).netloc not in (host, "") else None,
    )
    response = page.goto(live_server.url + url(world))
    assert response.status == 200, name
    page.wait_for_load_state("networkidle")
    if then is not None:
        then(page)
        page.wait_for_load_state("networkidle")
    open_every_fold(page)
    page.wait_for_timeout(100)  # a handler on a fold opening (ontoggle) would run now

    assert page.evaluate("typeof window.pwned") == "undefined", name
    assert dialogs == [] and elsewhere == []
    assert page.evaluate(SCRIPTS_AND_LINKS_JS) == []
    # the hostile text is there to read: the id on every page, and in every message shown
    assert HOSTILE_ID in page.inner_text("main"), name
    for text in page.locator(".message .text").all_inner_texts():
        assert PWN in text, (name, text[:200])
    if then is show_earlier_turns:
        assert SCRIPT in page.inner_text("#context .context-turn .message.user")


def test_every_page_shows_the_turn_where_it_shows_one(live_server, lead_page, world):
    """The checks above would pass on a page that shows nothing: the pages that show the
    conversation show its messages, the queues show the user text's beginning."""
    shows_messages = {"card", "card with the system prompt", "discussion", "proposals"}
    shows_messages |= {"lead: one conversation"}
    shows_user_text = {"moderation queue", "discuss queue"}
    for name, url, _ in PAGES:
        if name in shows_messages | shows_user_text:
            lead_page.goto(live_server.url + url(world))
            open_every_fold(lead_page)
            main = lead_page.inner_text("main")
            assert SCRIPT in main, name
            if name in shows_messages:
                assert lead_page.locator(".message .text").count() >= 2, name
    lead_page.goto(live_server.url + card(world, world.first))
    assert "You are helpful. " + SCRIPT in lead_page.inner_text(".message:has(h2:text('System'))")
    lead_page.goto(live_server.url + card(world, world.second))
    open_every_fold(lead_page)
    parts = lead_page.locator("details.part").all_inner_texts()
    assert len(parts) == 4 and SCRIPT in parts[0] and f"<svg onload={PWN}>" in parts[1]
