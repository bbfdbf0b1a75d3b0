// A split-check card (templates/annotation/_split_check.html): the original opens scrolled
// to the boundary, so the turns on both sides of the split are what the reader sees first;
// "Go to the split" scrolls there again and moves the focus onto the boundary.
(function () {
  function showBoundary(focus) {
    var boundary = document.getElementById("split-boundary");
    if (!boundary) return;
    var side = boundary.closest(".split-side");
    if (side) {
      var top = boundary.getBoundingClientRect().top - side.getBoundingClientRect().top;
      side.scrollTop += top - side.clientHeight / 3;
    }
    if (focus) boundary.focus({ preventScroll: true });
  }
  if (!window.cardsortSplitCheck) {
    // htmx runs the scripts of content it swaps in: bind once per document
    window.cardsortSplitCheck = true;
    document.addEventListener("htmx:afterSettle", function () { showBoundary(false); });
    document.addEventListener("click", function (e) {
      var link = e.target.closest && e.target.closest('a[href="#split-boundary"]');
      if (!link) return;
      e.preventDefault();
      showBoundary(true);
    });
  }
  showBoundary(false);
})();
