// The earlier turns of a card (the card and the discussion page, templates/annotation/_turn.html):
// the button (or c, labels.js clicks it) fetches them once into #context-turns; after that the
// same button, or c, hides and shows them again in place, without asking the server again.
(function () {
  if (window.cardsortLayout) return;  // bind once per document
  window.cardsortLayout = true;

  function label(button, shown) {
    if (!button.dataset.showLabel) button.dataset.showLabel = button.textContent;
    button.textContent = shown ? "Hide earlier turns" : button.dataset.showLabel;
    button.title = (shown ? "Hide" : "Show") + " the earlier turns (c)";
    button.setAttribute("aria-expanded", shown ? "true" : "false");
  }

  document.body.addEventListener("htmx:confirm", function (e) {
    var button = e.detail.elt;
    if (!button.matches || !button.matches("[data-context]") || !button.dataset.loaded) return;
    e.preventDefault();  // already here: fold or unfold, no request
    var turns = document.getElementById("context-turns");
    turns.hidden = !turns.hidden;
    label(button, !turns.hidden);
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "context-turns") return;
    var button = document.querySelector("[data-context]");
    if (!button) return;
    button.dataset.loaded = "1";
    e.detail.target.hidden = false;
    label(button, true);
  });
})();
