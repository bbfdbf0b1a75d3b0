// Code across turns, on the card and the discussion page (templates/annotation/_diff_button.html):
// d, or a click on "Diff with earlier code (d)", shows the diff of the reply's code against the
// closest code of the earlier replies (fetched by htmx into #diff-panel the first time), and
// hides it again; the panel's own button switches side by side / unified.
// d is ignored in a text box and with Ctrl, Alt or Meta, like the labels keys (labels.js).
// The card is swapped whole on next / previous: the new card comes with a new, empty panel.
(function () {
  if (window.cardsortDiff) return;  // htmx may run this script again with swapped content
  window.cardsortDiff = true;

  function inTextField(el) {
    return el && (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }
  function button() { return document.querySelector("[data-diff]"); }
  function show(panel, shown) {
    panel.hidden = !shown;
    var b = button();
    if (b) b.setAttribute("aria-expanded", String(shown));
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.isComposing || inTextField(e.target)) return;
    if (e.key !== "d" && e.key !== "D") return;
    var b = button();
    if (!b) return;
    e.preventDefault();
    b.click();
  });

  // Loaded once: later clicks (and d) fold and unfold it without asking the server again.
  document.body.addEventListener("htmx:confirm", function (e) {
    if (!e.detail.elt.matches || !e.detail.elt.matches("[data-diff]")) return;
    var panel = document.getElementById("diff-panel");
    if (!panel || !panel.hasAttribute("data-loaded")) return;
    e.preventDefault();
    show(panel, panel.hidden);
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    var panel = e.detail.target;
    if (!panel || panel.id !== "diff-panel") return;
    panel.setAttribute("data-loaded", "");
    show(panel, true);
  });
  document.body.addEventListener("htmx:responseError", function (e) {
    var panel = document.getElementById("diff-panel");
    if (!panel || e.detail.target !== panel) return;
    panel.textContent = "The diff could not be loaded (" + e.detail.xhr.status + "). Press d to try again.";
    panel.removeAttribute("data-loaded");
    show(panel, true);
  });
})();
