// The episode card (templates/annotation/episode_card.html, views/episode_card.py).
// The questions come in order: the verdict (keys p valid, n invalid: radios labels.js toggles
// by data-hotkey), then the section it asks for: the reasons when invalid (keys 1-4), the
// taxonomy's axes when valid (each type's key). The other section is hidden and disabled (it
// is not posted) and its keys are taken away (data-hotkey), so a key never ticks a box out of
// sight; the server checks the same (actions/episode_judgements.read).
// Enter submits (outside a text box, not on a button or link); c shows the rest of the session
// (fetched once, then hidden and shown again in place).
// labels.js (loaded before) gives the keys, Ctrl+Enter, an axis's at-most-N and the
// unsaved-changes guard.
(function () {
  if (window.cardsortEpisode) return;  // bind once per document
  window.cardsortEpisode = true;

  function form() { return document.querySelector("form[data-episode-form]"); }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }

  function sync(f) {
    var chosen = f.querySelector('input[name="valid"]:checked');
    var verdict = chosen ? chosen.value : "";
    f.querySelectorAll("fieldset[data-section]").forEach(function (section) {
      var on = section.dataset.section === verdict;
      section.hidden = !on;
      section.disabled = !on;
      section.querySelectorAll("input[data-key]").forEach(function (box) {
        if (on) box.setAttribute("data-hotkey", box.dataset.key);
        else box.removeAttribute("data-hotkey");
      });
    });
  }

  document.addEventListener("change", function (e) {
    var f = e.target.form;
    if (f && f.hasAttribute("data-episode-form") && e.target.name === "valid") sync(f);
  });
  if (form()) sync(form());

  // --- the rest of the session ----------------------------------------------------------
  function restButton() { return document.querySelector("[data-session-rest]"); }
  function label(button, shown) {
    button.innerHTML = (shown ? "Hide the rest of the session" : "Show the rest of the session") +
      " <kbd>c</kbd>";
    button.title = (shown ? "Hide" : "Show") + " the rest of the session (c)";
    button.setAttribute("aria-expanded", shown ? "true" : "false");
  }
  document.body.addEventListener("htmx:confirm", function (e) {
    var button = e.detail.elt;
    if (!button.matches || !button.matches("[data-session-rest]") || !button.dataset.loaded) return;
    e.preventDefault();  // already here: fold or unfold, no request
    var shown = button.getAttribute("aria-expanded") === "true";
    document.querySelectorAll(".session-rest").forEach(function (el) { el.hidden = shown; });
    label(button, !shown);
  });
  document.body.addEventListener("htmx:afterRequest", function (e) {
    var button = restButton();
    if (!button || e.detail.elt !== button || !e.detail.successful || button.dataset.loaded) return;
    button.dataset.loaded = "1";
    label(button, true);
  });

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.altKey || e.metaKey || e.isComposing) return;
    var f = form();
    if (e.key === "Enter" && e.ctrlKey) {  // labels.js sends a form with a type left to tick
      if (f && !inTextField(e.target)) { e.preventDefault(); f.requestSubmit(); }
      return;
    }
    if (e.ctrlKey || inTextField(e.target)) return;
    if (e.key === "c" || e.key === "C") {
      var button = restButton();
      if (button) { e.preventDefault(); button.click(); }
    } else if (e.key === "Enter" && f) {
      if (e.target.tagName === "BUTTON" || e.target.tagName === "A") return;
      e.preventDefault();
      f.requestSubmit();
    }
  });
})();
