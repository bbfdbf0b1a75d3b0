// Keyboard and htmx glue for every labels form (form[data-hotkeys]: the card, the discussion
// page's revise and decide forms).
// Keys outside a text box: the key shown beside a type toggles it (annotation/hotkeys.py:
// 1-9, then letters; "z a" means z, then a), 0 "no smell" (the two exclude each other; a
// type of a pick-one axis replaces that axis's other type; a tick past an axis's "at most N"
// (data-max) is undone and the form's limit message names the axis; an axis with a
// condition, data-when, is disabled until the condition holds), Ctrl+Enter sends the labels
// form.
// In a text box Ctrl+Enter sends the box's own form and Escape leaves the box.
// c shows the earlier turns (the card and the discussion page). On the card (#card) also:
// Enter submits, p / n previous / next card, ' (or ") quotes the text selected in a message
// of the card as evidence: the server finds it in the stored text and sends back the evidence
// box with the quote's span (annotation/evidence.py); nothing is stored before the submit.
// With two labels forms on a page (a lead who annotates and moderates the card) the keys act
// on the one last clicked or typed in, else on the first.
// Unsaved changes (a form that differs from what the server rendered, or one the server sent
// back refused, data-unsaved) are guarded: leaving the page asks first (beforeunload), and so
// does an htmx request that would replace the form (p / n on the card). The same for the
// other boxes one types in (form[data-guard]: a comment, a proposal).
// History: a labels page is never restored from a snapshot (htmx's, or the browser's
// back-forward cache): it is fetched again, so it shows what is stored.
// A refusal (409 already decided or round closed, 422 bad input) carries its message in the
// partial and is swapped in like a success: base.html's htmx-config (responseHandling) says
// so for every page, not this file.
(function () {
  // htmx runs the scripts of content it swaps in (a restored snapshot holds this one): bind
  // once per document, or one key press would toggle a type once per binding.
  if (window.cardsortLabels) return;
  window.cardsortLabels = true;

  if (window.htmx) {
    // A snapshot shows the boxes as the page was first rendered (ticks are properties, not
    // attributes) and would keep blind round-1 labels in sessionStorage: keep none, and let
    // Back reload the page from the server (which sends it with Cache-Control: no-store).
    htmx.config.historyCacheSize = 0;
    htmx.config.refreshOnHistoryMiss = true;
  }
  window.addEventListener("pageshow", function (e) {
    if (e.persisted) location.reload();  // from the back-forward cache: as left, not as stored
  });

  var active = null;  // the labels form the keys act on, once one was touched
  var pending = "";  // the first key of a two-key sequence
  var submitting = false;  // a labels form is being posted natively: the page is left on purpose

  function card() { return document.getElementById("card"); }
  function labelsForms() {
    return Array.prototype.slice.call(document.querySelectorAll("form[data-hotkeys]"));
  }
  function guardedForms() {
    return Array.prototype.slice.call(document.querySelectorAll("form[data-hotkeys], form[data-guard]"));
  }
  function labelsForm() {
    if (active && document.contains(active)) return active;
    return document.querySelector("form[data-hotkeys]");
  }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }
  function clickLink(selector) {
    var el = document.querySelector(selector);
    if (el) el.click();
    return !!el;
  }
  function locked(form) {  // a labels form whose boxes are all disabled (a locked card)
    return form.hasAttribute("data-hotkeys") &&
      !form.querySelector('input[name="types"]:not([disabled]), input[name="no_smell"]:not([disabled])');
  }
  function touch(e) {
    var form = e.target.closest && e.target.closest("form[data-hotkeys]");
    if (form) active = form;
  }
  document.addEventListener("focusin", touch);
  document.addEventListener("pointerdown", touch);

  // --- keys ------------------------------------------------------------------------------
  function toggleByKey(form, key) {
    var sequence = pending + key;
    pending = "";
    var box = form.querySelector('input[data-hotkey="' + sequence + '"]');
    if (box) {
      if (!box.matches(":disabled")) box.click();
      return true;
    }
    if (form.querySelector('input[data-hotkey^="' + sequence + '"]')) {
      pending = sequence;
      return true;
    }
    return false;
  }
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.metaKey || e.isComposing) return;
    if (e.key === "Enter" && e.ctrlKey) {
      var target = e.target.form || labelsForm();
      if (target && !locked(target)) {
        e.preventDefault();
        target.requestSubmit();
      }
      return;
    }
    if (e.ctrlKey || inTextField(e.target)) {
      if (e.key === "Escape" && e.target.blur) e.target.blur();
      return;
    }
    var form = labelsForm();
    var key = e.key.length === 1 ? e.key.toLowerCase() : "";
    if (form && /^[0-9a-z]$/.test(key) && toggleByKey(form, key)) {
      e.preventDefault();
      return;
    }
    if (key === "c") {  // the card and the discussion page show the turn
      if (clickLink("[data-context]")) e.preventDefault();
      return;
    }
    if (!card()) return;
    if ((e.key === "'" || e.key === '"') && form && !locked(form) && quoteSelection(form)) {
      e.preventDefault();
      return;
    }
    if (e.key === "Enter") {
      if (e.target.tagName === "BUTTON" || e.target.tagName === "A" || !form || locked(form)) return;
      e.preventDefault();
      form.requestSubmit();
    } else if (key === "p" || key === "n") {
      if (clickLink('#card [data-nav="' + (key === "p" ? "prev" : "next") + '"]')) e.preventDefault();
    }
  });
  // --- evidence ---------------------------------------------------------------------------
  function selectedMessage(range) {  // the .text[data-part] holding the whole selection
    function holder(node) {
      var el = node.nodeType === 1 ? node : node.parentElement;
      return el && el.closest(".text[data-part]");
    }
    var start = holder(range.startContainer);
    return start && start === holder(range.endContainer) ? start : null;
  }
  function quoteSelection(form) {
    var box = form.querySelector("#evidence-box");
    if (!box || !window.htmx) return false;
    var selection = window.getSelection();
    var values = {quote: selection ? selection.toString() : "", turn: "", part: "", hint: ""};
    if (selection && selection.rangeCount) {
      var range = selection.getRangeAt(0);
      var message = selectedMessage(range);
      if (message) {
        var before = document.createRange();  // where the selection starts in the message
        before.setStart(message, 0);
        before.setEnd(range.startContainer, range.startOffset);
        values.turn = message.dataset.turnId;
        values.part = message.dataset.part;
        // a tool call, tool result or thinking: its position in the turn's reply parts
        if (message.dataset.partIndex !== undefined) values.part_index = message.dataset.partIndex;
        // a piece of a reply told apart by its tool calls starts at data-offset of the text
        values.hint = String(parseInt(message.dataset.offset || "0", 10) + before.toString().length);
      }
    }
    htmx.ajax("POST", box.dataset.evidenceUrl, {source: box, target: box, swap: "outerHTML", values: values})
      .then(function () {
        var shown = document.getElementById("evidence-box");
        var details = shown && shown.closest("details");
        if (details) details.open = true;
        if (shown && shown.querySelector('input[name="evidence_turn"]')) form.setAttribute("data-unsaved", "");
      });
    return true;
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
      if (box.hasAttribute("data-single")) {
        form.querySelectorAll('input[name="types"]').forEach(function (t) {
          if (t !== box && t.dataset.axis === box.dataset.axis) t.checked = false;
        });
      }
    }
    axisLimit(form, box);
    axisConditions(form);
  });

  // An axis labelled only when another axis holds one of some codes (fieldset data-when,
  // {other axis: [codes]}: TaxonomyVersion's Axis.when, which the server checks too): its
  // fieldset is disabled and its ticks cleared until the condition holds.
  function axisConditions(form) {
    form.querySelectorAll("fieldset.axis[data-when]").forEach(function (set) {
      var when = JSON.parse(set.dataset.when || "{}");
      var holds = Object.keys(when).every(function (other) {
        return Array.prototype.some.call(
          form.querySelectorAll('input[name="types"][data-axis="' + other + '"]'),
          function (t) { return t.checked && !t.matches(":disabled") && when[other].indexOf(t.value) !== -1; });
      });
      if (!holds) {
        set.querySelectorAll('input[name="types"]').forEach(function (t) { t.checked = false; });
      }
      set.disabled = !holds;
      set.classList.toggle("inactive", !holds);
    });
  }
  function allConditions(root) {
    (root || document).querySelectorAll("form[data-hotkeys]").forEach(axisConditions);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { allConditions(); });
  } else {
    allConditions();
  }
  document.body.addEventListener("htmx:afterSettle", function () { allConditions(); });

  // An axis of "at most N" types (data-max): the tick that would make N+1 is undone, and the
  // form's limit message says which axis and what to do; the server checks the same rule
  // (TaxonomyVersion.check_selection).
  function axisLimit(form, box) {
    var message = form.querySelector("[data-axis-limit]");
    if (!message) return;
    var max = parseInt(box.dataset.max || "0", 10);
    if (box.name === "types" && box.checked && max) {
      var ticked = Array.prototype.filter.call(
        form.querySelectorAll('input[name="types"]'),
        function (t) { return t.checked && t.dataset.axis === box.dataset.axis; });
      if (ticked.length > max) {
        box.checked = false;
        var label = box.closest("label");
        var name = label ? label.querySelector("span").textContent.trim() : box.value;
        message.textContent = box.dataset.axisName + ": at most " + max + " types. Untick one of " +
          "the " + max + " ticked to choose " + name + ".";
        message.hidden = false;
        return;
      }
    }
    message.hidden = true;
    message.textContent = "";
  }

  // --- unsaved changes -------------------------------------------------------------------
  function changed(el) {
    if (el.disabled || !el.name) return false;
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    if (el.tagName === "SELECT") {
      var rendered = 0;
      Array.prototype.forEach.call(el.options, function (o, i) { if (o.defaultSelected) rendered = i; });
      return el.selectedIndex !== rendered;
    }
    if (el.tagName === "TEXTAREA" || el.type === "text") return el.value !== el.defaultValue;
    return false;
  }
  function unsaved(form) {
    return form.hasAttribute("data-unsaved") || Array.prototype.some.call(form.elements, changed);
  }
  function keepAsSaved(form) {
    form.removeAttribute("data-unsaved");
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.type === "checkbox" || el.type === "radio") el.defaultChecked = el.checked;
      else if (el.tagName === "SELECT") {
        Array.prototype.forEach.call(el.options, function (o) { o.defaultSelected = o.selected; });
      } else if (el.tagName === "TEXTAREA" || el.type === "text") el.defaultValue = el.value;
    });
  }
  document.addEventListener("submit", function (e) {
    // htmx has already taken (prevented) its own posts; what is left leaves the page
    if (!e.defaultPrevented && e.target.matches("[data-hotkeys], [data-guard]")) submitting = true;
  });
  window.addEventListener("beforeunload", function (e) {
    if (submitting || !guardedForms().some(unsaved)) return;
    e.preventDefault();
    e.returnValue = "";  // what older browsers need to ask
  });
  document.body.addEventListener("htmx:confirm", function (e) {
    var swapped = e.detail.target;
    var own = e.detail.elt.closest ? e.detail.elt.closest("form") : null;
    var lost = guardedForms().filter(function (f) {
      return f !== own && swapped && swapped.contains(f) && unsaved(f);
    });
    if (!lost.length) return;
    e.preventDefault();
    var what = lost.some(function (f) { return f.hasAttribute("data-hotkeys"); })
      ? "Your labels here are not saved. Leave without saving them?"
      : "What you typed here is not sent. Leave without sending it?";
    if (window.confirm(what)) {
      e.detail.issueRequest(true);
    }
  });

  // --- htmx answers ----------------------------------------------------------------------
  document.body.addEventListener("htmx:beforeOnLoad", function (e) {
    var status = e.detail.xhr.status;
    var elt = e.detail.elt;
    // saved: nothing to warn about, even if the answer is a redirect (the last card)
    if (status >= 200 && status < 300 && elt.matches && elt.matches("form[data-hotkeys], form[data-guard]")) {
      keepAsSaved(elt);
    }
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "card") {
      if (document.activeElement) document.activeElement.blur();
      window.scrollTo(0, 0);
    }
  });
})();
