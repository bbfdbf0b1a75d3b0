"""A reply's code as the annotator sees it in Chromium: highlighted (code.css is loaded), its
lines kept, and a long line scrolls sideways inside its block instead of wrapping or widening
the page (the labels panel stays where it is)."""

from __future__ import annotations

import pytest

from annotation.models import Turn
from tests.browser.pages import log_in, open_card
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "x = [" + ", ".join(str(i) for i in range(400)) + "]"
REPLY = f"Here is the fix:\n\n```python\ndef f():\n    {LONG}\n    return x\n```\n\nSee [the docs](https://docs.example/f)."
# every construct the rendering makes, for axe-core to judge
CONSTRUCTS = """# Title\n\n**bold**, *it*, ~~gone~~, `code`, [link](https://a.example/x), <https://b.example>
![alt text](https://img.example/i.png)\n\n> quoted\n\n1. one\n2. two\n\n- a\n- b\n
| name | n |\n|:--|--:|\n| a | 1 |\n\n```js\nconst x = 1; // comment\nlet s = "str";\n```
```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n```
```sql\nSELECT a FROM t WHERE b = 'c' AND n > 3;\n```"""


@pytest.fixture
def turn(study, alice):
    group = make_group(study, "g", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    Turn.objects.filter(pk=turn.pk).update(reply_text=REPLY)
    return turn


def test_a_long_code_line_scrolls_inside_its_block(browser, live_server, turn):
    context, page, errors = log_in(browser, live_server, "alice")
    page.set_viewport_size({"width": 1280, "height": 900})
    open_card(page, live_server.url, turn)
    pre = page.locator(".message.reply pre")
    assert pre.get_attribute("data-lang") == "python"
    box = pre.evaluate("e => [e.scrollWidth, e.clientWidth, getComputedStyle(e).overflowX]")
    assert box[0] > 2 * box[1] and box[2] == "auto"  # the line is whole, the block scrolls
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert pre.inner_text().splitlines() == ["def f():", f"    {LONG}", "    return x"]
    # highlighted: a keyword has the style's colour, not the text's
    keyword = page.locator(".message.reply pre .k").first
    assert keyword.evaluate("e => getComputedStyle(e).color") == "rgb(169, 13, 145)"
    # the label panel is still beside the turn, in the viewport's width
    form = page.locator("#card form.types").bounding_box()
    assert form["x"] + form["width"] <= 1280
    assert "the docs (https://docs.example/f)" in page.inner_text(".message.reply")
    assert errors == []
    context.close()


def test_axe_finds_nothing_serious_in_rendered_text(browser, live_server, turn):
    from axe_playwright_python.sync_playwright import Axe

    Turn.objects.filter(pk=turn.pk).update(
        user_text=CONSTRUCTS,
        reply_parts=[{"type": "tool_call", "name": "Bash", "arguments": '{"command": "ls"}'}],
    )
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, turn)
    page.keyboard.press("t")  # the parts' bodies too
    results = Axe().run(page, context={"include": [[".turn"]]})
    serious = [
        (v["id"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []
    assert errors == []
    context.close()
