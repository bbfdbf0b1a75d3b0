// The card's "None fits? Propose a new type" box (templates/annotation/proposals/_propose.html).
// Keys typed in it stay in it: labels.js would take Ctrl+Enter and Enter on the summary for the
// labels form. In the box, Escape leaves the field and Ctrl+Enter sends the proposal. Bound on
// every piece of page htmx loads (the card is swapped whole; the box swaps itself after a post).
(function () {
  if (window.cardsortPropose) return;  // htmx may run this script again: bind once
  window.cardsortPropose = true;

  function keysStayHere(e) {
    e.stopPropagation();
    if (e.key === "Escape") {
      document.activeElement.blur();
    } else if (e.key === "Enter" && e.ctrlKey) {
      e.preventDefault();
      this.querySelector("form").requestSubmit();
    }
  }

  document.addEventListener("htmx:load", function (e) {
    var root = e.target;
    var boxes = Array.from(root.querySelectorAll ? root.querySelectorAll("#propose") : []);
    if (root.id === "propose") boxes.push(root);
    boxes.forEach(function (box) {
      if (box.dataset.keysBound) return;
      box.dataset.keysBound = "1";
      box.addEventListener("keydown", keysStayHere);
    });
  });
})();
