// The open sort's board (templates/annotation/opensort/board.html). Everything posts the
// board's own forms (htmx swaps #board with the answer), so the keyboard and the mouse do the
// same thing:
// - drag a tag onto a type (or "Tags without a type"): its "Type" form, with that type;
//   onto another tag: its "Merge into" form, with that tag;
// - keys on a focused tag, outside a text box: m the tag's type list, r its name box, g its
//   merge box; anywhere outside a text box: u undo, y redo;
// - after a swap the focus goes back to the tag it was on (or the board's first control).
(function () {
  if (window.cardsortBoard) return;  // htmx may run this script again: bind once
  window.cardsortBoard = true;

  function inTextField(el) {
    return el && (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit", "hidden"].includes(el.type)));
  }
  function tagOf(el) { return el && el.closest ? el.closest("[data-tag]") : null; }
  function tagEl(pk) { return document.getElementById("tag-" + pk); }
  function submit(form) {
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  // -- drag and drop --------------------------------------------------------------------------
  document.addEventListener("dragstart", function (e) {
    var tag = tagOf(e.target);
    if (!tag || tag.getAttribute("draggable") !== "true") return;
    e.dataTransfer.setData("text/plain", tag.dataset.tag);
    e.dataTransfer.effectAllowed = "move";
    tag.classList.add("dragging");
  });
  document.addEventListener("dragend", function (e) {
    var tag = tagOf(e.target);
    if (tag) tag.classList.remove("dragging");
  });
  function dropTarget(el) {
    var tag = tagOf(el);
    if (tag) return tag;
    return el && el.closest ? el.closest("[data-drop-type]") : null;
  }
  document.addEventListener("dragover", function (e) {
    var target = dropTarget(e.target);
    if (!target || !document.querySelector("#board")) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "move";
  });
  document.addEventListener("drop", function (e) {
    var target = dropTarget(e.target);
    if (!target) return;
    var pk = e.dataTransfer.getData("text/plain");
    var dragged = tagEl(pk);
    if (!dragged) return;
    e.preventDefault();
    if (target.dataset.tag !== undefined) {
      if (target.dataset.tag === pk) return;
      var merge = dragged.querySelector("form.tag-merge");
      merge.querySelector("[name=target]").value = "#" + target.dataset.tag;
      submit(merge);
    } else {
      var move = dragged.querySelector("form.tag-move");
      move.querySelector("[name=type]").value = target.dataset.dropType;
      submit(move);
    }
  });

  // -- keys -----------------------------------------------------------------------------------
  document.addEventListener("keydown", function (e) {
    if (!document.querySelector("#board") || e.isComposing) return;
    if (e.ctrlKey || e.altKey || e.metaKey || inTextField(e.target)) return;
    var key = e.key.length === 1 ? e.key.toLowerCase() : "";
    if (key === "u" || key === "y") {
      var button = document.querySelector(key === "u" ? "[data-undo]" : "[data-redo]");
      if (button && !button.disabled) {
        e.preventDefault();
        button.click();
      }
      return;
    }
    var tag = tagOf(e.target);
    if (!tag) return;
    var box = tag.querySelector('[data-key="' + key + '"]');
    if (!box) return;
    e.preventDefault();
    box.focus();
    if (box.select) box.select();
  });
  // Escape in a tag's box goes back to the tag
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var tag = tagOf(e.target);
    if (tag && e.target !== tag) {
      e.preventDefault();
      tag.focus();
    }
  });

  // -- focus across swaps ---------------------------------------------------------------------
  var lastTag = null;
  document.addEventListener("htmx:beforeRequest", function (e) {
    // only the board's own requests: the analytics' loading must not forget the tag
    if (!e.detail.target || e.detail.target.id !== "board") return;
    var tag = tagOf(document.activeElement) || tagOf(e.target);
    lastTag = tag ? tag.dataset.tag : null;
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    if (!e.detail.target || e.detail.target.id !== "board") return;
    var board = document.getElementById("board");
    var tag = lastTag && tagEl(lastTag);
    if (tag) {
      tag.focus();
    } else if (board) {
      var alert = board.querySelector("[role=alert]");
      var first = board.querySelector("button:not([disabled]), [data-tag]");
      if (alert) alert.setAttribute("tabindex", "-1");
      (alert || first || board).focus();
    }
  });
})();
