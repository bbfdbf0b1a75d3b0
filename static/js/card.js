// Hotkeys for the card: 1-9 toggle types, 0 "no smell", Enter submits (Ctrl+Enter inside a
// text box), p / n previous / next card, c shows the earlier turns. htmx does the rest.
(function () {
  function card() { return document.getElementById("card"); }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }
  document.addEventListener("change", function (e) {
    var box = e.target;
    if (!box.closest || !box.closest("#card form")) return;
    var form = box.form;
    // "no smell" and the types exclude each other.
    if (box.name === "no_smell" && box.checked) {
      form.querySelectorAll('input[name="types"]').forEach(function (t) { t.checked = false; });
    } else if (box.name === "types" && box.checked) {
      var ns = form.querySelector('input[name="no_smell"]');
      if (ns) ns.checked = false;
    }
  });
  document.addEventListener("keydown", function (e) {
    var c = card();
    if (!c || e.altKey || e.metaKey) return;
    var form = c.querySelector("form");
    if (e.key === "Enter" && (e.ctrlKey || !inTextField(e.target))) {
      if (e.target.tagName === "BUTTON" || e.target.tagName === "A") return;
      e.preventDefault();
      if (form) form.requestSubmit();
      return;
    }
    if (e.ctrlKey || inTextField(e.target)) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (/^[0-9]$/.test(e.key)) {
      var box = c.querySelector('input[data-hotkey="' + e.key + '"]');
      if (box && !box.disabled) {
        e.preventDefault();
        box.click();
      }
    } else if (e.key === "p" || e.key === "n") {
      var link = c.querySelector('[data-nav="' + (e.key === "p" ? "prev" : "next") + '"]');
      if (link) { e.preventDefault(); link.click(); }
    } else if (e.key === "c") {
      var more = c.querySelector("[data-context]");
      if (more) { e.preventDefault(); more.click(); }
    }
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "card") {
      if (document.activeElement) document.activeElement.blur();
      window.scrollTo(0, 0);
    }
  });
})();
