"""Every page, partial, POST reply, download and API answer a member can reach for one card
(the study's jobs and their files, the report and time per card included), and a probe that
says which of them show someone's round-1 secrets (labels, notes, evidence, time, and the
agreement results computed from them): the access matrix's tool."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client
from django.urls import reverse

from annotation.models import Job, Turn
from annotation.rendering import message_html
from tests.factories import HTMX, token_client

DECISION = {"types": ["code_rollback"], "rationale": "the reply rolls back"}
# what an agreement result shows wherever it is rendered (in any case): the Jobs panel's
# summary, the report page, its downloads and the JSON (its pairs' confusion matrices)
AGREEMENT_SHOWN = ("cohen's kappa", "cohen&#x27;s kappa", '"confusion"', "krippendorff")


@dataclass(frozen=True)
class Secret:
    """What one annotator did blind on a card: a type nobody else picks, a note, evidence,
    and the active time spent on it (`time_ms`, shown in seconds on time per card; 0: none).
    `code` is looked for as a rendered label on a page (data-code=...), since the type's
    checkbox is on every labels form; quoted in the API's JSON; as it is in a file."""

    code: str
    note: str
    evidence: str
    time_ms: int = 0

    def found_in(self, body: str, api: bool, file: bool = False) -> bool:
        if self.note in body or self.evidence in body:
            return True
        if self.time_ms and (f"{self.time_ms / 1000:.1f} s" in body or str(self.time_ms) in body):
            return True
        if file:
            return self.code in body
        if api:
            return f'"{self.code}"' in body
        return f'data-code="{self.code}"' in body


def body_of(response) -> str:
    """A response's body as text, a streamed file's (a download) included."""
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return raw.decode(errors="replace")


def is_file(response) -> bool:
    return response.has_header("Content-Disposition")


def shows_agreement(body: str) -> bool:
    body = body.lower()
    return any(mark in body for mark in AGREEMENT_SHOWN)


def _page_requests(slug: str, turn: Turn) -> list[tuple[str, str, dict, dict]]:
    """(method, url, data, headers) for every page and partial of the study and the card."""
    t = [slug, turn.pk]
    reads = [
        reverse("study", args=[slug]),
        reverse("queue", args=[slug]),
        reverse("my_cards", args=[slug]),
        reverse("discuss_queue", args=[slug]),
        reverse("moderate_queue", args=[slug]),
        reverse("card", args=t),
        reverse("card_context", args=t),
        reverse("discussion", args=t),
        reverse("discussion_context", args=t),
        reverse("card_text", args=[*t, turn.index, "user"]),
        reverse("discussion_text", args=[*t, turn.index, "reply"]),
        reverse("card_timeline", args=t),
        reverse("split_queue", args=[slug]),
        reverse("taxonomy", args=[slug]),
        # the lead's pages that show labels, times or job results
        reverse("lead_card_times", args=[slug]),
        reverse("lead_conversations", args=[slug]),
        reverse("lead_conversation", args=[slug, turn.conversation_id]),
        reverse("lead_browse", args=[slug]),
        reverse("lead_gold", args=[slug]),
        reverse("lead_flags", args=[slug]),
        reverse("job_list", args=[slug]),
        reverse("report", args=[slug]),
        *(reverse("report_download", args=[slug, fmt]) for fmt in ("json", "csv", "md")),
        reverse("judge_runs", args=[slug]),
        *_job_pages(slug),
    ]
    out = [("get", u, {}, h) for u in reads for h in ({}, HTMX)]
    posts = [
        (reverse("discussion", args=t), {"types": ["code_rollback"], "round": "2"}),
        (reverse("discussion", args=t), {"types": ["code_rollback"], "round": "1"}),
        (reverse("discussion", args=t), {"round": "2"}),  # 422: no labels
        (reverse("comment", args=t), {"text": ""}),  # 422
        (reverse("comment", args=t), {"text": "a word"}),  # 409 while open
        (reverse("decide", args=t), DECISION),  # 409 while open
        (reverse("decide", args=t), {"rationale": ""}),  # 422
        # the quote key's box: only what was posted comes back
        (reverse("card_evidence", args=t), {"quote": "write", "turn": turn.pk, "part": "user"}),
    ]
    out += [("post", u, d, h) for u, d in posts for h in ({}, HTMX)]
    return out


def _jobs(slug: str) -> list[Job]:
    return list(Job.objects.filter(study__slug=slug).order_by("pk"))


def _job_pages(slug: str) -> list[str]:
    """Each job's page (its partial for htmx) and its download."""
    out = []
    for job in _jobs(slug):
        out += [reverse(name, args=[slug, job.pk]) for name in ("job_detail", "job_download")]
    return out


def _api_requests(slug: str, turn: Turn) -> list[tuple[str, str, dict]]:
    base = f"/api/studies/{slug}"
    jobs = [f"{base}/jobs/{job.pk}/{tail}" for job in _jobs(slug) for tail in ("", "download/")]
    return [
        *(("get", url, {}) for url in jobs),
        ("get", f"{base}/agreement/", {}),
        ("get", f"{base}/conversations/", {}),
        ("get", "/api/studies/", {}),
        ("get", f"{base}/cards/", {}),
        ("get", f"{base}/cards/{turn.pk}/", {}),
        ("get", f"{base}/annotations/", {}),
        ("put", f"{base}/cards/{turn.pk}/annotation/", {"labels": ["made_up"]}),  # 400
        ("put", f"{base}/cards/{turn.pk}/annotation/", {"labels": [], "round": 2}),  # 409
        ("get", f"{base}/cards/{turn.pk}/discussion/", {}),
        ("get", f"{base}/disputes/", {}),
        ("get", f"{base}/consensus/", {}),
        ("get", f"{base}/proposals/", {}),
        ("get", f"{base}/groups/", {}),
        ("get", f"{base}/conversations/{turn.conversation_id}/turns/", {}),
        ("get", f"{base}/jobs/", {}),
        ("get", f"{base}/judge-runs/", {}),
        ("get", f"{base}/episodes/", {}),
        ("post", f"{base}/cards/{turn.pk}/consensus/", {"labels": [], "rationale": "r"}),
    ]


# the reads that, when they answer 200, must show the card itself (its user message): a
# page that shows nothing would otherwise pass for one that hides the secret
SHOWS_THE_CARD = ("card", "discussion", "card_timeline")


def leaks(user, slug: str, turn: Turn, secret: Secret) -> list[str]:
    """The requests whose answer shows `secret` to `user` (or fails with a 500, or answers
    200 to a read of the card without the card in it), as "METHOD url [htmx] -> status";
    [] when nothing leaks."""
    found = []
    client = Client()
    client.force_login(user)
    card_reads = {reverse(name, args=[slug, turn.pk]) for name in SHOWS_THE_CARD}
    shown = message_html(turn.user_text)  # as the card renders it
    for method, url, data, headers in _page_requests(slug, turn):
        response = getattr(client, method)(url, data, **headers)
        body = body_of(response)
        blank = method == "get" and url in card_reads and response.status_code == 200
        blank = blank and shown not in body
        shows = secret.found_in(body, api=False, file=is_file(response)) or shows_agreement(body)
        if response.status_code >= 500 or blank or shows:
            tag = " htmx" if headers else ""
            found.append(f"{method.upper()} {url}{tag} {data or ''} -> {response.status_code}")
    api = token_client(user)
    for method, url, data in _api_requests(slug, turn):
        response = getattr(api, method)(url, data, format="json")
        body = body_of(response)
        shows = secret.found_in(body, api=True, file=is_file(response)) or shows_agreement(body)
        if response.status_code >= 500 or shows:
            found.append(f"API {method.upper()} {url} {data or ''} -> {response.status_code}")
    return found


def sees(user, slug: str, turn: Turn, secret: Secret) -> list[str]:
    """The reads (discussion page and partial, timeline, and for leads the API list) that DO
    show `secret` to `user`: the other side of the rule, for those who may see it."""
    client = Client()
    client.force_login(user)
    shown = []
    for name in ("discussion", "card_timeline"):
        for headers in ({}, HTMX):
            body = client.get(reverse(name, args=[slug, turn.pk]), **headers).content.decode()
            if secret.found_in(body, api=False):
                shown.append(name + (" htmx" if headers else ""))
    return shown


def sees_elsewhere(user, slug: str, secret: Secret) -> list[str]:
    """Where else `user` DOES see `secret`: time per card (their time) and a `times` job's
    API answer (the kept tables), the report page and an agreement job's page and API
    answer (the agreement result counting their label), a finished export's download (the first one: their note in it): the other
    side of the rule for the pages the leads (and, the report, the moderators) have."""
    client = Client()
    client.force_login(user)
    api = token_client(user)
    jobs = _jobs(slug)
    agreement = next(j for j in jobs if j.kind == "agreement")
    export = next(j for j in jobs if j.kind == "export")
    times = next(j for j in jobs if j.kind == "times")
    reads = {
        "time per card": client.get(reverse("lead_card_times", args=[slug])),
        "report": client.get(reverse("report", args=[slug])),
        "agreement job page": client.get(reverse("job_detail", args=[slug, agreement.pk])),
        "agreement job API": api.get(f"/api/studies/{slug}/jobs/{agreement.pk}/"),
        "times job API": api.get(f"/api/studies/{slug}/jobs/{times.pk}/"),
        "export download": client.get(reverse("job_download", args=[slug, export.pk])),
    }
    shown = []
    for place, response in reads.items():
        body = body_of(response)
        found = secret.found_in(body, api=place.endswith("API"), file=is_file(response))
        if found or shows_agreement(body):
            shown.append(place)
    return shown
