// A split-check card (templates/annotation/_split_check.html, _split_check_entry.html): the
// original opens scrolled to the boundary (a split point) or to the entry's first turn (an
// entry), so what is checked is what the reader sees first; "Go to the split" / "Go to the
// entry" scrolls there again and moves the focus onto the mark.
(function () {
  function showBoundary(focus) {
    var boundary =
      document.getElementById("split-boundary") || document.getElementById("entry-start");
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
      var link =
        e.target.closest &&
        e.target.closest('a[href="#split-boundary"], a[href="#entry-start"]');
      if (!link) return;
      e.preventDefault();
      showBoundary(true);
    });
  }
  showBoundary(false);
})();
