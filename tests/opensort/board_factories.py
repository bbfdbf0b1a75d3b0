"""An open sort to consolidate: two experts (alice, bob) in one open-sorting group with six
cards, their free tags and tag sets made with the ORM (the tagging pages are another part's),
and the lead. Used by the board, freeze and access tests."""

from __future__ import annotations

from annotation.models import FreeTag, Group, Kind, Phase, Role, Study, TagSet, Turn
from tests.factories import make_conversation, make_group, make_user


def make_tag(study: Study, author, name: str, description: str = "") -> FreeTag:
    tag, _ = FreeTag.objects.get_or_create(
        study=study, author=author, name=name, defaults={"description": description}
    )
    return tag


def tag_card(turn: Turn, group: Group, annotator, *names: str, note: str = "") -> TagSet:
    """`annotator`'s tag set on the card: their own tags of these names (created as needed);
    no names: tagged with nothing ("no smell")."""
    study = group.study
    tag_set, _ = TagSet.objects.update_or_create(
        turn=turn, group=group, annotator=annotator, defaults={"note": note}
    )
    tag_set.tags.set([make_tag(study, annotator, n) for n in names])
    return tag_set


def make_open_sort(study: Study, n_turns: int = 6, annotators=("alice", "bob")) -> dict:
    """A study in the open sort: a group of experts with `n_turns` cards and a lead."""
    study.phase = Phase.OPEN_SORT
    study.save(update_fields=["phase"])
    experts = [make_user(name) for name in annotators]
    group = make_group(study, "experts", experts, kind=Kind.EXPERT)
    conversation = make_conversation(study, "c1", n_turns=n_turns, group=group)
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    return {
        "group": group,
        "experts": experts,
        "turns": list(conversation.turns.order_by("index")),
        "lead": lead,
    }


# the six cards' tags of the browser test and the freeze tests: alice and bob name the same
# two ideas differently ("vague ask" / "unclear request", "ignored rule" / "broke constraint")
SIX_CARDS = [
    (["vague ask"], ["unclear request"]),
    (["ignored rule"], ["broke constraint"]),
    (["vague ask", "ignored rule"], ["unclear request", "broke constraint"]),
    ([], []),
    (["vague ask"], ["broke constraint"]),
    (["ignored rule"], ["broke constraint"]),
]


def tag_six_cards(world: dict, rows=SIX_CARDS) -> None:
    alice, bob = world["experts"]
    for turn, (mine, theirs) in zip(world["turns"], rows, strict=True):
        tag_card(turn, world["group"], alice, *mine)
        tag_card(turn, world["group"], bob, *theirs)
