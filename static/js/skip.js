// Skip and flag for later on the card (templates/annotation/skip/_skip_flag.html, views/skip.py),
// and on an episode's card (templates/annotation/episode/_skip_flag.html: plain posts).
// Keys outside a text box and without Ctrl/Alt/Meta: s skips the card, f opens the reason box
// and puts the cursor in it. In the box, Ctrl+Enter sends it (labels.js sends a text box's own
// form) and Escape closes it. Both go through htmx like the card's submit, so labels.js asks
// first when the card has unsaved ticks; a refused flag (422) comes back as the box alone, open,
// with what was typed, and gets the cursor again.
(function () {
  if (window.cardsortSkip) return;  // htmx may run this script again: bind once
  window.cardsortSkip = true;

  function inTextField(el) {
    return el && (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }
  function flagBox() { return document.getElementById("flag-box"); }
  function focusReason(box) {
    var reason = box.querySelector("textarea[name=reason]");
    if (!reason) return;
    reason.focus();
    reason.setSelectionRange(reason.value.length, reason.value.length);
  }

  document.addEventListener("keydown", function (e) {
    var box = flagBox();
    if (!box || e.isComposing) return;
    if (e.key === "Escape" && box.open && box.contains(e.target)) {
      e.preventDefault();
      box.open = false;
      box.querySelector("summary").focus();
      return;
    }
    if (e.ctrlKey || e.altKey || e.metaKey || inTextField(e.target)) return;
    var key = e.key.length === 1 ? e.key.toLowerCase() : "";
    if (key === "s") {
      var skip = document.querySelector("#skip-flag [data-skip]");
      if (skip) {
        e.preventDefault();
        skip.click();
      }
    } else if (key === "f") {
      e.preventDefault();
      box.open = true;
      focusReason(box);
    }
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    var box = flagBox();
    if (box && e.detail.target === box) focusReason(box);
  });
})();
