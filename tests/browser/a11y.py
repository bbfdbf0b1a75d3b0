"""Accessibility checks for the browser tests: axe-core run on the page as it is shown, and
what axe cannot see (where the keyboard focus goes, and whether it shows).

axe-core comes bundled in axe-playwright-python (its axe.min.js, injected into the page):
nothing is downloaded. The rules are WCAG 2.x A and AA plus axe's best practices; a test fails
on a serious or critical violation, and on any break of the page's structure (STRUCTURE: one
h1, headings in order, a main landmark), whatever axe rates it; the message names each one
with its rule, impact, where it is (axe's CSS selectors) and what to do, so the failure says
what and where."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe

BLOCKING = ("serious", "critical")
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
# rated "moderate" by axe, yet what a screen reader user finds their way by
STRUCTURE = ("page-has-heading-one", "heading-order", "landmark-one-main")

_axe = Axe()


def axe_violations(
    page, impacts: tuple[str, ...] = BLOCKING, rules: tuple[str, ...] = STRUCTURE
) -> list[str]:
    """axe-core's violations of `impacts` or of `rules` on the page as shown now, one line per
    element: "rule (impact) at selector: help [axe's summary of the failure]"."""
    options = {"runOnly": {"type": "tag", "values": RULES}, "resultTypes": ["violations"]}
    results = _axe.run(page, options=options).response
    found = []
    for rule in results["violations"]:
        if rule["impact"] not in impacts and rule["id"] not in rules:
            continue
        for node in rule["nodes"]:
            where = " ".join(" >> ".join(t) if isinstance(t, list) else t for t in node["target"])
            summary = " ".join(node.get("failureSummary", "").split())
            found.append(f"{rule['id']} ({rule['impact']}) at {where}: {rule['help']} [{summary}]")
    return found


def assert_no_serious_violations(page, what: str) -> None:
    found = axe_violations(page)
    assert not found, (
        f"{what} ({page.url}): {len(found)} accessibility violation(s) (axe-core; serious, "
        f"critical, or of the page's structure):\n  " + "\n  ".join(found)
    )


# The element that has the keyboard focus, and whether its focus shows: a ring (outline) at
# least 2px wide whose colour has a contrast of 3:1 or more with the background behind it
# (WCAG 1.4.11; the browser's default ring is 1px), or a box-shadow. A checkbox counts when
# its label draws the ring.
FOCUS_JS = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const rgba = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const contrast = (a, b) => {
    const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const backdrop = e => {
    for (let n = e.parentElement; n; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c;
    }
    return [255, 255, 255];
  };
  const shows = e => {
    const s = getComputedStyle(e);
    if (s.boxShadow && s.boxShadow !== "none") return true;
    return s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2 &&
      contrast(rgba(s.outlineColor), backdrop(e)) >= 3;
  };
  const label = el.closest("label");
  return {
    tag: el.tagName.toLowerCase(),
    name: el.getAttribute("name") || "",
    text: (el.innerText || el.value || "").trim().slice(0, 60),
    visible: shows(el) || (label !== null && shows(label)),
  };
}"""


def focused(page) -> dict | None:
    """The focused element (tag, name, value, text) and whether its focus is visible."""
    return page.evaluate(FOCUS_JS)


def tab_through(page, limit: int = 200) -> list[dict]:
    """Press Tab from the top of the page until the focus comes back round (or leaves the
    page); every element reached, in order."""
    page.evaluate("document.activeElement?.blur()")
    reached: list[dict] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = focused(page)
        if now is None or (reached and now == reached[0]):
            break
        reached.append(now)
    return reached
