// What a failed htmx request says (every page: templates/base.html). base.html's htmx-config
// swaps nothing for an error other than 409 and 422, so the form keeps what was typed; this
// says what failed, in #feedback (role=alert): the server's answer (with its reason, from a
// 403 page's [data-refusal]), no connection, or no answer in time. The next request that
// succeeds clears it.
(function () {
  if (window.cardsortFeedback) return;  // bind once per document
  window.cardsortFeedback = true;

  function region() { return document.getElementById("feedback"); }
  function isPost(e) {
    var verb = e.detail.requestConfig && e.detail.requestConfig.verb;
    return verb && verb.toLowerCase() !== "get";
  }
  function say(text) {
    var box = region();
    if (!box) return;
    box.textContent = "";
    var p = document.createElement("p");
    p.setAttribute("role", "alert");
    p.textContent = text;
    var close = document.createElement("button");
    close.type = "button";
    close.className = "link";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "×";
    close.addEventListener("click", function () { box.textContent = ""; });
    box.appendChild(p);
    box.appendChild(close);
  }
  function reasonOf(xhr) {  // the 403 page says why (templates/403.html)
    try {
      var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
      var why = doc.querySelector("[data-refusal]");
      return why ? why.textContent.trim() : "";
    } catch (err) {
      return "";
    }
  }
  function kept(e) {
    return isPost(e) ? " What you typed is still here: try again." : " Try again.";
  }
  function failed(e) { return isPost(e) ? "Not saved: " : "Not loaded: "; }

  document.body.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var why = reasonOf(xhr);
    var answer = "the server answered " + xhr.status + (xhr.statusText ? " (" + xhr.statusText + ")" : "");
    say(failed(e) + answer + "." + (why ? " " + why : "") + kept(e));
  });
  document.body.addEventListener("htmx:sendError", function (e) {
    say(failed(e) + "could not reach the server (no connection?)." + kept(e));
  });
  document.body.addEventListener("htmx:timeout", function (e) {
    var seconds = Math.round((htmx.config.timeout || 0) / 1000);
    var start = isPost(e) ? "Not confirmed: " : "Not loaded: ";
    say(start + "the server did not answer within " + seconds + " s" +
      (isPost(e) ? ", so this may not be saved." : ".") + kept(e));
  });
  document.body.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail.successful && region()) region().textContent = "";
  });
})();
