// The card's clock: the ACTIVE time an annotator spends on a card (#card[data-turn-id]),
// reported to the server (annotation/views/timing.py card_time) in small increments; on an
// episode's card (#episode[data-time-url]) the same, to episode_time.
// Active: the tab is visible and there was input (a key, a pointer press or move, the wheel,
// a scroll) within the last minute. The clock pauses a minute after the last input and
// resumes on the next one; opening a card counts as input (the annotator just asked for it).
// Reports: every 15 s; before htmx replaces #card (submit, next, previous), for the card
// being left; and when the page goes to the background or away (pagehide), with
// navigator.sendBeacon, which cannot set headers, so the CSRF token travels in the FormData.
// The server checks every increment (a cap per report, the wall time since the last one);
// what it refuses is dropped, never sent again.
(function () {
  // htmx runs the scripts of content it swaps in: bind once per document
  if (window.cardsortTimer) return;
  window.cardsortTimer = true;

  var IDLE_MS = 60 * 1000;  // the clock pauses this long after the last input
  var REPORT_MS = 15 * 1000;  // how often the time counted is reported
  var MAX_REPORT_MS = 120 * 1000;  // the most one report may carry (annotation/timing.py)

  var current = null;  // the card being timed: {id, url}
  var visible = document.visibilityState === "visible";
  var lastInput = Date.now();
  var from = lastInput;  // the time counted so far runs up to here
  var pending = 0;  // ms counted on `current`, not reported yet

  // The card's time URL: the card's own URL (its labels form posts there) + "time/"; an
  // episode's card (issue 21) names its own (#episode[data-time-url], its annotators' only).
  function cardOnPage() {
    var el = document.getElementById("card");
    var form = el && el.querySelector("form[data-hotkeys]");
    if (el && el.dataset.turnId && form) {
      return { id: el.dataset.turnId, url: new URL("time/", form.action).href };
    }
    var episode = document.querySelector("#episode[data-time-url]");
    if (!episode) return null;
    return {
      id: "episode-" + episode.dataset.episodeId,
      url: new URL(episode.dataset.timeUrl, window.location.href).href,
    };
  }

  // Add the active time since `from` to `pending`: up to now, or to a minute after the last
  // input if that came first; nothing while hidden.
  function settle() {
    var now = Date.now();
    if (visible && current) {
      var end = Math.min(now, lastInput + IDLE_MS);
      if (end > from) pending += end - from;
    }
    from = now;
  }

  function csrfToken() {
    var field = document.querySelector('input[name="csrfmiddlewaretoken"]');
    if (field) return field.value;
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  // Send what was counted on the current card. `leaving`: the page is going away, and only
  // sendBeacon is sure to be delivered.
  function report(leaving) {
    settle();
    var ms = Math.min(Math.floor(pending), MAX_REPORT_MS);
    pending = 0;
    if (!current || ms <= 0) return;
    var data = new FormData();
    data.append("ms", String(ms));
    data.append("csrfmiddlewaretoken", csrfToken());
    if (leaving && navigator.sendBeacon && navigator.sendBeacon(current.url, data)) return;
    fetch(current.url, { method: "POST", body: data, credentials: "same-origin", keepalive: true })
      .catch(function () {});  // offline: those seconds are lost, nothing else is
  }

  function input() {
    settle();
    lastInput = from;
  }
  ["keydown", "pointerdown", "pointermove", "wheel", "scroll"].forEach(function (type) {
    window.addEventListener(type, input, { capture: true, passive: true });
  });

  document.addEventListener("visibilitychange", function () {
    settle();  // counted up to now as it was (visible or not)
    visible = document.visibilityState === "visible";
    if (!visible) report(true);
  });
  window.addEventListener("pagehide", function () { report(true); });

  // htmx replaces #card: report the card being left before it goes, then time the new one
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "card" && e.detail.shouldSwap) report(false);
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "card") return;
    var card = cardOnPage();
    if (card && (!current || card.id !== current.id)) {
      settle();
      pending = 0;
      lastInput = from;  // the annotator just asked for this card
    }
    current = card;
  });

  current = cardOnPage();
  setInterval(function () { report(false); }, REPORT_MS);
})();
