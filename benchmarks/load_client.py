"""The load test's annotator (benchmarks/load_test.py): one person in a browser, as a thread
that replays the requests the card's page sends (htmx headers, the X-CSRFToken header of
base.html, the labels form's fields as labels.js posts them), and the log of what the server
answered. No Django here: it only speaks HTTP."""

from __future__ import annotations

import random
import re
import threading
import time
from urllib.parse import urlsplit

import requests

PASSWORD = "bench-" + "password"  # card_keys_study's annotators

CARD_ID = re.compile(r'<div id="card" data-turn-id="(\d+)"')
NAV = re.compile(r'href="([^"]+)" hx-get="[^"]+" [^>]*data-nav="(prev|next)"')
TYPE_BOX = re.compile(r'name="types" value="([^"]+)"(?![^>]*disabled)')
CSRF_HEADER = re.compile(r"hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'")
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
FORM_POST = re.compile(r'<form class="types" [^>]*hx-post="([^"]+)"')
CONTEXT = re.compile(r'data-context hx-get="([^"]+)"')


class Log:
    """Every request's (kind, ms, status), the errors, and the submits the server accepted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: list[tuple[str, float, int]] = []
        self.errors: list[str] = []
        self.accepted: list[dict] = []
        self.refused = 0  # 409: round 1 closed meanwhile (a correct answer, nothing stored)
        # submits without an answer (the client gave up, as htmx does after 30 s): the
        # server may have stored them; neither lost nor unexpected if it did
        self.unanswered: list[dict] = []

    def add(self, kind: str, ms: float, status: int) -> None:
        with self.lock:
            self.samples.append((kind, ms, status))

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)


class Annotator:
    """One person in a browser: a session, the card shown, the CSRF token of the page."""

    def __init__(self, base: str, slug: str, username: str, log: Log, rng: random.Random):
        self.base, self.slug, self.username, self.log, self.rng = base, slug, username, log, rng
        self.http = requests.Session()
        self.csrf = ""
        self.html = ""
        self.url = ""
        self.no_answer = False  # the last request got no answer (timeout, connection lost)

    def request(self, kind: str, method: str, url: str, **kwargs) -> requests.Response | None:
        started = time.perf_counter()
        self.no_answer = False
        try:
            response = self.http.request(method, self.base + url, timeout=30, **kwargs)
        except requests.RequestException as e:
            self.log.error(f"{kind} {url}: {e.__class__.__name__}")
            self.no_answer = True
            return None
        ms = (time.perf_counter() - started) * 1000
        self.log.add(kind, ms, response.status_code)
        if response.status_code >= 400 and response.status_code != 409:
            self.log.error(f"{kind} {url}: HTTP {response.status_code}")
            return None
        return response

    def htmx(self, target: str) -> dict:
        return {
            "HX-Request": "true",
            "HX-Target": target,
            "HX-Current-URL": self.base + self.url,
            "X-CSRFToken": self.csrf,
        }

    def log_in(self) -> bool:
        page = self.http.get(self.base + "/accounts/login/", timeout=30)
        token = CSRF_FIELD.search(page.text)
        data = {"username": self.username, "password": PASSWORD}
        data["csrfmiddlewaretoken"] = token.group(1) if token else ""
        answer = self.http.post(
            self.base + "/accounts/login/", data=data, timeout=30, allow_redirects=False
        )
        if answer.status_code != 302:
            self.log.error(f"login {self.username}: HTTP {answer.status_code}")
            return False
        return True

    def open_queue(self) -> bool:
        """The queue, followed to the card (a whole page): its CSRF token for htmx."""
        response = self.request("card page", "GET", f"/s/{self.slug}/queue/")
        if response is None or not CARD_ID.search(response.text):
            return False  # an error, or the done page: nothing left to label
        self.url = urlsplit(response.url).path
        self.html = response.text
        self.csrf = CSRF_HEADER.search(response.text).group(1)
        return True

    def card(self, url: str) -> str | None:
        response = self.request("card htmx", "GET", url, headers=self.htmx("card"))
        return response.text if response is not None else None

    def read(self, think: tuple[float, float]) -> None:
        """Read the card: maybe the earlier turns (c), maybe the previous card and back."""
        pause = self.rng.uniform(*think) if think[1] else 0
        time.sleep(pause * 0.4)
        context = CONTEXT.search(self.html)
        if context and self.rng.random() < 0.5:
            self.request("context", "GET", context.group(1), headers=self.htmx("context-turns"))
        time.sleep(pause * 0.3)
        nav = dict((which, href) for href, which in NAV.findall(self.html))
        if "prev" in nav and self.rng.random() < 0.2:
            self.card(nav["prev"])  # p, a look at the previous card, then n back to this one
            time.sleep(pause * 0.1)
            html = self.card(self.url)
            if html is not None:
                self.html = html
        time.sleep(pause * 0.2)

    def label(self) -> bool:
        """Submit the labels form as htmx does (its fields in document order); False when
        there is no more card to label."""
        action, token = FORM_POST.search(self.html), CSRF_FIELD.search(self.html)
        codes = TYPE_BOX.findall(self.html)
        if action is None or not codes:  # a locked card: go on with n
            nav = dict((which, href) for href, which in NAV.findall(self.html))
            return bool(nav.get("next")) and self._show(self.card(nav["next"]), nav["next"])
        chosen = sorted(self.rng.sample(codes, self.rng.choice([0, 1, 1, 2])))
        data = [("csrfmiddlewaretoken", token.group(1))] + [("types", c) for c in chosen]
        data += [] if chosen else [("no_smell", "1")]
        data += [("note", ""), ("evidence", ""), ("confidence", "")]
        turn_id = int(CARD_ID.search(self.html).group(1))
        response = self.request(
            "label", "POST", action.group(1), data=data, headers=self.htmx("card")
        )
        if response is None:
            if self.no_answer:
                with self.log.lock:  # no answer at all: stored or not, the server knows
                    self.log.unanswered.append(
                        {"username": self.username, "turn": turn_id, "types": chosen}
                    )
            return self.open_queue()
        if response.status_code == 409:
            with self.log.lock:
                self.log.refused += 1
        else:
            with self.log.lock:
                self.log.accepted.append(
                    {"username": self.username, "turn": turn_id, "types": chosen}
                )
        if response.headers.get("HX-Redirect"):  # the last card: the done page
            return self.open_queue()
        pushed = response.headers.get("HX-Push-Url") or self.url
        return self._show(response.text, pushed)

    def _show(self, html: str | None, url: str) -> bool:
        if html is None or not CARD_ID.search(html):
            return self.open_queue()
        self.html, self.url = html, url
        return True


def annotate(who: Annotator, think: tuple[float, float], until: float) -> None:
    # people do not all open their queue in the same second: each starts within a card's time
    time.sleep(who.rng.uniform(0, think[1]))
    try:
        if not who.open_queue():
            return
        while time.monotonic() < until:
            who.read(think)
            if time.monotonic() >= until or not who.label():
                return
    except Exception as e:  # a broken page: counted, the others go on
        who.log.error(f"{who.username}: {e.__class__.__name__}: {e}")


def trivial_url(base: str) -> str:
    try:
        if requests.get(base + "/healthz", timeout=10).status_code == 200:
            return "/healthz"
    except requests.RequestException:
        pass
    return "/accounts/login/"


def hammer_trivial(base: str, url: str, log: Log, until: float, pause: float) -> None:
    session = requests.Session()
    while time.monotonic() < until:
        started = time.perf_counter()
        try:
            status = session.get(base + url, timeout=30).status_code
        except requests.RequestException as e:
            log.error(f"trivial: {e.__class__.__name__}")
            continue
        log.add("trivial", (time.perf_counter() - started) * 1000, status)
        if status != 200:
            log.error(f"trivial: HTTP {status}")
        time.sleep(pause)
