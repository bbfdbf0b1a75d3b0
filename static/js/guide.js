// The guideline panel (templates/annotation/_guide.html): each type's definition and example.
// ? (outside a text box, without Ctrl/Alt/Meta) or a [data-guide-open] button opens it and
// moves the focus into it; Escape, ? or its Close button closes it and gives the focus back to
// where it was.
(function () {
  if (window.cardsortGuide) return;  // bind once per document
  window.cardsortGuide = true;

  var returnTo = null;

  function panel() { return document.getElementById("guide"); }
  function isOpen() { var p = panel(); return !!p && !p.hidden; }
  function expanded(value) {
    document.querySelectorAll("[data-guide-open]").forEach(function (b) {
      b.setAttribute("aria-expanded", value ? "true" : "false");
    });
  }
  function open() {
    var p = panel();
    if (!p) return false;
    returnTo = document.activeElement;
    p.hidden = false;
    expanded(true);
    p.focus();
    return true;
  }
  function close() {
    var p = panel();
    if (!p || p.hidden) return false;
    p.hidden = true;
    expanded(false);
    var back = returnTo && document.contains(returnTo) ? returnTo : document.querySelector("[data-guide-open]");
    returnTo = null;
    if (back && back.focus) back.focus();
    return true;
  }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    if (e.key === "Escape" && isOpen()) {
      close();
      e.preventDefault();
      e.stopPropagation();
    } else if (e.key === "?" && !inTextField(e.target)) {
      if (isOpen() ? close() : open()) e.preventDefault();
    }
  }, true);  // before labels.js: Escape here closes the panel, it does not leave a box
  document.addEventListener("click", function (e) {
    var opener = e.target.closest && e.target.closest("[data-guide-open]");
    if (opener) {
      e.preventDefault();
      if (isOpen()) close(); else open();
    } else if (e.target.closest && e.target.closest("[data-guide-close]")) {
      close();
    }
  });
})();
