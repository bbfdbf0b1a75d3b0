"""An open sort to test the board on: experts, their free tags on cards, a board type."""

from __future__ import annotations

from annotation.models import BoardType, FreeTag, Kind, Phase, Role, TagSet
from tests.factories import make_conversation, make_group, make_study, make_user

HOSTILE = "<script>alert('x')</script> & \"q\" ]]> =1+1"


def make_open_sort(slug: str = "s1") -> dict:
    """Study s1 in the open sort: experts alice and bob (group E) tagged the 3 cards of c1;
    lena leads; ed is an expert of group F (c2) with one of its 2 cards left to tag; sam a
    student annotator of a closed-sort group. The board: alice's "vague" merged into bob's
    "unclear", under type "Ambiguous"; alice's "=cmd()" tag alone."""
    study = make_study(slug)
    study.phase = Phase.OPEN_SORT
    study.save()
    alice, bob, ed, sam, lena = (make_user(n) for n in ("alice", "bob", "ed", "sam", "lena"))
    study.add_member(lena, Role.LEAD, Kind.EXPERT)
    experts = make_group(study, "E", [alice, bob], kind=Kind.EXPERT)
    other = make_group(study, "F", [ed], kind=Kind.EXPERT)
    students = make_group(study, "S", [sam])
    students.phase = Phase.CLOSED_SORT
    students.save()
    c1 = make_conversation(study, "c1", n_turns=3, group=experts)
    c2 = make_conversation(study, "c2", n_turns=2, group=other)
    make_conversation(study, "c3", n_turns=2, group=students)
    t1, t2, t3 = c1.turns.order_by("index")
    ambiguous = BoardType.objects.create(study=study, name="Ambiguous")
    unclear = FreeTag.objects.create(study=study, author=bob, name="unclear", board_type=ambiguous)
    vague = FreeTag.objects.create(study=study, author=alice, name="vague", merged_into=unclear)
    cmd = FreeTag.objects.create(study=study, author=alice, name="=cmd()")
    for turn, user, tags in ((t1, alice, [vague, cmd]), (t2, alice, [vague]), (t3, alice, []),
                             (t1, bob, [unclear]), (t2, bob, []), (t3, bob, [unclear])):  # fmt: skip
        TagSet.objects.create(turn=turn, group=experts, annotator=user).tags.set(tags)
    TagSet.objects.create(turn=c2.turns.first(), group=other, annotator=ed)
    return {"study": study, "alice": alice, "bob": bob, "ed": ed, "sam": sam, "lena": lena,
            "turns": (t1, t2, t3), "tags": (unclear, vague, cmd), "group": experts}  # fmt: skip
