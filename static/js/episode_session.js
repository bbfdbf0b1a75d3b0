// The session page of an episode group (templates/annotation/episode_session.html).
// Keys outside a text box: ' (or ") adds the text selected in a turn as a quote of the
// missed episode being recorded: the page posts the selection (its text, turn, part, the
// reply part's position and where it starts in the rendered text) with the form's quotes to
// #quotes' data-quote-url; the server finds it in the stored text and sends the quotes box
// back (annotation/actions/episodes.locate_selection). 0, 1, 2 rate the session's coverage
// (none, partly, fully): the coverage form's button, unless the server disabled it.
// The "Add the selected text" button does what ' does with the last selection made in the
// turns (a click may clear it). A quote's Remove button takes it out of the form. An episode
// opened in the panel marks its turns (.in-episode) in the session.
(function () {
  if (window.cardsortEpisodeSession) return;
  window.cardsortEpisodeSession = true;

  var lastSelection = null;  // {quote, turn, part, part_index, hint}: the last one in the turns

  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }

  function holder(node) {  // the message text or reply part the node lies in
    var el = node && (node.nodeType === 1 ? node : node.parentElement);
    return el && el.closest(".session-turn .text[data-part], .session-turn details.part");
  }

  function describe(selection) {
    if (!selection || !selection.rangeCount || selection.isCollapsed) return null;
    var range = selection.getRangeAt(0);
    var start = holder(range.startContainer);
    if (!start || start !== holder(range.endContainer)) {
      return {quote: selection.toString(), turn: "", part: "", part_index: "", hint: ""};
    }
    var section = start.closest(".session-turn");
    var values = {quote: selection.toString(), turn: section.dataset.turnIndex, part: "",
      part_index: "", hint: ""};
    var before = document.createRange();  // where the selection starts in the holder
    before.setStart(start, 0);
    before.setEnd(range.startContainer, range.startOffset);
    var offset = before.toString().length;
    if (start.matches("details.part")) {
      var parts = Array.prototype.slice.call(section.querySelectorAll(".message.reply details.part"));
      values.part = start.dataset.kind;
      values.part_index = String(parts.indexOf(start));
      var summary = start.querySelector("summary");
      values.hint = String(Math.max(0, offset - (summary ? summary.textContent.length : 0)));
    } else {
      values.part = start.dataset.part;
      values.hint = String(parseInt(start.dataset.offset || "0", 10) + offset);
    }
    return values;
  }

  document.addEventListener("selectionchange", function () {
    var found = describe(window.getSelection());
    if (found && found.turn) lastSelection = found;
  });

  function addQuote(values) {
    var box = document.getElementById("quotes");
    if (!box || !window.htmx) return false;
    values = values || {quote: "", turn: "", part: "", part_index: "", hint: ""};
    // the form's fields go with it (htmx sends the enclosing form of a POST's source)
    htmx.ajax("POST", box.dataset.quoteUrl, {source: box, target: box, swap: "outerHTML", values: values});
    return true;
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.isComposing || inTextField(e.target)) return;
    if (e.key === "'" || e.key === '"') {
      if (addQuote(describe(window.getSelection()) || lastSelection)) e.preventDefault();
      return;
    }
    if (e.key === "0" || e.key === "1" || e.key === "2") {
      var button = document.querySelector('#coverage button[data-coverage="' + e.key + '"]');
      if (button && !button.disabled && !button.closest("fieldset[disabled]")) {
        e.preventDefault();
        button.click();
      }
    }
  });

  function markOpened() {
    var opened = document.querySelector(".opened-episode");
    var first = opened ? parseInt(opened.dataset.firstTurn, 10) : 0;
    var last = opened ? parseInt(opened.dataset.lastTurn, 10) : -1;
    document.querySelectorAll(".session-turn").forEach(function (turn) {
      var index = parseInt(turn.dataset.turnIndex, 10);
      turn.classList.toggle("in-episode", index >= first && index <= last);
    });
  }
  document.body.addEventListener("htmx:afterSettle", markOpened);

  document.addEventListener("click", function (e) {
    var add = e.target.closest && e.target.closest("[data-add-quote]");
    if (add) {
      addQuote(describe(window.getSelection()) || lastSelection);
      return;
    }
    var remove = e.target.closest && e.target.closest("[data-remove-quote]");
    if (remove) remove.closest(".quote-item").remove();
  });
})();
