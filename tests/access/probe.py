"""Every page, partial, POST reply and API answer a member can reach for one card, and a
probe that says which of them show someone's round-1 secrets: the access matrix's tool."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client
from django.urls import reverse

from annotation.models import Turn
from annotation.rendering import message_html
from tests.factories import HTMX, token_client

DECISION = {"types": ["code_rollback"], "rationale": "the reply rolls back"}


@dataclass(frozen=True)
class Secret:
    """What one annotator wrote blind on a card: a type nobody else picks, a note, evidence.
    `code` is looked for as a rendered label (data-code=...), since the type's checkbox is
    on every labels form."""

    code: str
    note: str
    evidence: str

    def found_in(self, body: str, api: bool) -> bool:
        if self.note in body or self.evidence in body:
            return True
        if api:
            return f'"{self.code}"' in body
        return f'data-code="{self.code}"' in body


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


def _api_requests(slug: str, turn: Turn) -> list[tuple[str, str, dict]]:
    base = f"/api/studies/{slug}"
    return [
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
        body = response.content.decode()
        blank = method == "get" and url in card_reads and response.status_code == 200
        blank = blank and shown not in body
        if response.status_code >= 500 or blank or secret.found_in(body, api=False):
            tag = " htmx" if headers else ""
            found.append(f"{method.upper()} {url}{tag} {data or ''} -> {response.status_code}")
    api = token_client(user)
    for method, url, data in _api_requests(slug, turn):
        response = getattr(api, method)(url, data, format="json")
        body = response.content.decode()
        if response.status_code >= 500 or secret.found_in(body, api=True):
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
