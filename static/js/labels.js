// Keyboard and htmx glue for every labels form (form[data-hotkeys]: the card, the discussion
// page's revise and decide forms). 1-9 toggle types, 0 "no smell" (the two exclude each
// other), Ctrl+Enter sends the form of the focused text box, Escape leaves a text box.
// On the card (#card) also: Enter submits, p / n previous / next card, c earlier turns.
// htmx does not swap error answers by default; a refusal here (409 already decided, 422 bad
// input) carries its message in the partial, so it is swapped in like a success.
(function () {
  function card() { return document.getElementById("card"); }
  function labelsForm() { return document.querySelector("form[data-hotkeys]"); }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }
  function clickLink(selector) {
    var c = card();
    var el = c && c.querySelector(selector);
    if (el) el.click();
    return !!el;
  }
  document.addEventListener("change", function (e) {
    var box = e.target;
    var form = box.form;
    if (!form || !form.hasAttribute("data-hotkeys")) return;
    if (box.name === "no_smell" && box.checked) {
      form.querySelectorAll('input[name="types"]').forEach(function (t) { t.checked = false; });
    } else if (box.name === "types" && box.checked) {
      var ns = form.querySelector('input[name="no_smell"]');
      if (ns) ns.checked = false;
    }
  });
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.metaKey) return;
    if (e.key === "Enter" && e.ctrlKey && e.target.form) {
      e.preventDefault();
      e.target.form.requestSubmit();
      return;
    }
    if (e.ctrlKey || inTextField(e.target)) {
      if (e.key === "Escape" && e.target.blur) e.target.blur();
      return;
    }
    var form = labelsForm();
    if (form && /^[0-9]$/.test(e.key)) {
      var box = form.querySelector('input[data-hotkey="' + e.key + '"]');
      if (box && !box.disabled) { e.preventDefault(); box.click(); }
      return;
    }
    if (!card()) return;
    if (e.key === "Enter") {
      if (e.target.tagName === "BUTTON" || e.target.tagName === "A" || !form) return;
      e.preventDefault();
      form.requestSubmit();
    } else if (e.key === "p" || e.key === "n") {
      if (clickLink('[data-nav="' + (e.key === "p" ? "prev" : "next") + '"]')) e.preventDefault();
    } else if (e.key === "c") {
      if (clickLink("[data-context]")) e.preventDefault();
    }
  });
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    if (status === 409 || status === 422) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "card") {
      if (document.activeElement) document.activeElement.blur();
      window.scrollTo(0, 0);
    }
  });
})();
