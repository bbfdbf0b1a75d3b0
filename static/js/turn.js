// The shown turn's reply parts (tool calls, tool results, thinking: <details class="part">,
// folded, readable without JavaScript). Key t opens them all, or closes them all when all
// are open. The card (#card) and the discussion page show one turn (section.turn); the
// earlier turns shown with c (#context, inside it) are left as they are.
// Like labels.js: keys typed in a text box, and with Ctrl, Alt or Meta, are not ours.
(function () {
  // htmx runs the scripts of content it swaps in: bind once per document
  if (window.cardsortTurn) return;
  window.cardsortTurn = true;

  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    if (e.key !== "t" && e.key !== "T") return;
    if (inTextField(e.target)) return;
    var parts = document.querySelectorAll("section.turn > .message.reply > details.part");
    if (!parts.length) return;
    e.preventDefault();
    var allOpen = Array.prototype.every.call(parts, function (p) { return p.open; });
    parts.forEach(function (p) { p.open = !allOpen; });
  });
})();
