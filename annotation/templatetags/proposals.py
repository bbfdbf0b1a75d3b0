"""The proposals box of the study page: the user's own proposals and, for experts, the
queue's pending count."""

from __future__ import annotations

from django import template

from ..access import is_expert
from ..models import Proposal

register = template.Library()


@register.simple_tag
def proposals_box(study, user, role) -> dict:
    mine = list(
        Proposal.objects.filter(study=study, proposer=user)
        .select_related("turn__conversation", "decided_by")
        .order_by("-created_at", "-id")[:10]
    )
    expert = is_expert(study, user, role)
    pending = study.proposals.pending().count() if expert else None
    return {"mine": mine, "expert": expert, "pending": pending}
