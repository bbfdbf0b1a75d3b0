// The open sort's tag panel on the card (form[data-tags], templates/annotation/opensort/_tags.html).
// Keys: g (outside a text box) focuses the tag box. In the tag box or its description box:
// Enter adds the highlighted suggestion, else the typed tag (with the description, for a new
// one); in an empty box Enter submits the card. Up/Down move through the suggestions (the
// user's own tags, fetched by htmx into #tag-suggestions). Backspace in the empty tag box
// removes the last tag; each tag's "remove" button removes it. Adding a tag clears "no smell"
// and ticking "no smell" removes the tags (they exclude each other, as on the closed-sort card).
// labels.js does the rest: 0, Enter outside a text box, Ctrl+Enter, p / n, the unsaved guard
// (a changed tag list marks the form data-unsaved).
(function () {
  if (window.cardsortTags) return;  // bound once per document (htmx reruns swapped scripts)
  window.cardsortTags = true;

  function panel() { return document.querySelector("form[data-tags]"); }
  function box(form) { return form.querySelector("[data-tag-input]"); }
  function descriptionBox(form) { return form.querySelector("[data-tag-description]"); }
  function options(form) {
    return Array.prototype.slice.call(form.querySelectorAll("[data-tag-suggestions] [role=option]"));
  }
  function highlighted(form) {
    return form.querySelector('[data-tag-suggestions] [role=option][aria-selected="true"]');
  }
  function chips(form) {
    return Array.prototype.slice.call(form.querySelectorAll("[data-chosen-tags] > li"));
  }
  function norm(text) { return text.trim().replace(/\s+/g, " "); }
  function inTextField(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type)));
  }

  function highlight(form, option) {
    options(form).forEach(function (o) { o.setAttribute("aria-selected", o === option ? "true" : "false"); });
    if (option) {
      box(form).setAttribute("aria-activedescendant", option.id);
      option.scrollIntoView({ block: "nearest" });
    } else {
      box(form).removeAttribute("aria-activedescendant");
    }
  }
  function closeSuggestions(form) {
    form.querySelector("[data-tag-suggestions]").innerHTML = "";
    box(form).setAttribute("aria-expanded", "false");
    box(form).removeAttribute("aria-activedescendant");
  }
  function changed(form) { form.setAttribute("data-unsaved", ""); }

  function addTag(form, name, description) {
    name = norm(name);
    if (!name) return false;
    var same = chips(form).filter(function (li) { return li.dataset.tag.toLowerCase() === name.toLowerCase(); });
    if (!same.length) {
      var li = form.querySelector("template[data-chip-template]").content.firstElementChild.cloneNode(true);
      li.dataset.tag = name;
      li.querySelector('input[name="tag"]').value = name;
      li.querySelector('input[name="tag_description"]').value = norm(description || "");
      li.querySelector(".tag-name").textContent = name;
      li.querySelector("[data-remove-tag]").setAttribute("aria-label", "Remove tag " + name);
      form.querySelector("[data-chosen-tags]").appendChild(li);
    }
    var noSmell = form.querySelector('input[name="no_smell"]');
    if (noSmell) noSmell.checked = false;
    box(form).value = "";
    descriptionBox(form).value = "";
    closeSuggestions(form);
    changed(form);
    return true;
  }
  function removeTag(form, li) {
    li.remove();
    changed(form);
    box(form).focus();
  }

  document.addEventListener("keydown", function (e) {
    var form = panel();
    if (!form || e.altKey || e.metaKey || e.ctrlKey || e.isComposing) return;
    var target = e.target;
    var inBox = target === box(form) || target === descriptionBox(form);
    if (!inBox) {
      if (e.key.toLowerCase() === "g" && !inTextField(target) && !e.shiftKey) {
        e.preventDefault();
        box(form).focus();
      }
      return;
    }
    if (e.key === "Enter") {
      e.preventDefault();  // never the form's implicit submit: Enter here adds a tag
      var option = target === box(form) ? highlighted(form) : null;
      var added = option
        ? addTag(form, option.dataset.name, "")
        : addTag(form, box(form).value, descriptionBox(form).value);
      if (added) box(form).focus();
      else form.requestSubmit();
    } else if ((e.key === "ArrowDown" || e.key === "ArrowUp") && target === box(form)) {
      var all = options(form);
      if (!all.length) return;
      e.preventDefault();
      var at = all.indexOf(highlighted(form));
      var next = e.key === "ArrowDown" ? at + 1 : (at < 0 ? all.length - 1 : at - 1);
      highlight(form, next >= 0 && next < all.length ? all[next] : null);
    } else if (e.key === "Backspace" && target === box(form) && !target.value) {
      var last = chips(form).pop();
      if (last) {
        e.preventDefault();
        removeTag(form, last);
      }
    }
  });

  document.addEventListener("click", function (e) {
    var form = panel();
    if (!form || !form.contains(e.target)) return;
    var remove = e.target.closest("[data-remove-tag]");
    var option = e.target.closest("[data-tag-suggestions] [role=option]");
    if (remove) {
      removeTag(form, remove.closest("li"));
    } else if (option) {
      addTag(form, option.dataset.name, "");
      box(form).focus();
    } else if (e.target.closest("[data-add-tag]")) {
      addTag(form, box(form).value, descriptionBox(form).value);
      box(form).focus();
    }
  });

  document.addEventListener("change", function (e) {
    var form = e.target.form;
    if (!form || !form.hasAttribute("data-tags") || e.target.name !== "no_smell") return;
    if (e.target.checked) {
      chips(form).forEach(function (li) { li.remove(); });
      changed(form);
    }
  });

  document.body.addEventListener("htmx:afterSwap", function (e) {
    var form = panel();
    if (!form || !e.detail.target || e.detail.target.id !== "tag-suggestions") return;
    box(form).setAttribute("aria-expanded", options(form).length ? "true" : "false");
    box(form).removeAttribute("aria-activedescendant");
  });
})();
