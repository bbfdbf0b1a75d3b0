// The discussion page. Hotkeys on the labels form (1-9 types, 0 "no smell"), "no smell" and
// the types exclude each other, Ctrl+Enter sends the form of the focused text box. htmx does
// not swap error answers by default; a refusal here (409 already decided, 422 bad input)
// carries its message in the partial, so it is swapped in like a success.
(function () {
  function labelsForm() { return document.querySelector("form[data-hotkeys]"); }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
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
    }
  });
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    if (status === 409 || status === 422) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();
