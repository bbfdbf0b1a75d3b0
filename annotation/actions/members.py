"""Making people members of a study with a role and a kind, and seating them in a group:
`manage.py add_members` (and `create_study --create-user`). Every seat goes through
annotation/accounts/seats.py and Group.seat, the rules the members and groups pages follow
(the last lead stays a lead, a moderator moderates a group, one seat per person in a group,
one group per person among groups sharing a conversation); this module only puts them in
order and says what changed. A refusal is a SeatRefused (those rules) or a MemberRefused
(the input: an unknown user, a role without the group it needs)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from ..accounts.roster import NOT_A_USERNAME, is_username
from ..accounts.seats import seat_annotator, set_moderator, set_role
from ..models import Group, Kind, Membership, Role, Study


class MemberRefused(ValueError):
    """People who cannot be made members as asked; the message names them and why."""


def new_user(username: str):
    """An account for `username` with no usable password (its owner sets one through an
    invitation or a password reset), as `import_annotations --create-members` makes them."""
    if not is_username(username):
        raise MemberRefused(f"{username[:80]!r} {NOT_A_USERNAME}")
    user = get_user_model()(username=username)
    user.set_unusable_password()
    user.save()
    return user


def find_users(usernames: list[str], *, create: bool, option: str) -> tuple[list, list]:
    """(the users named, in the order given, each once; those created). Unknown names are
    one MemberRefused naming them all, unless `create`: then they are created (`option` is
    the flag that would create them, for the message)."""
    wanted = list(dict.fromkeys(usernames))
    User = get_user_model()
    found = {u.username: u for u in User.objects.filter(username__in=wanted)}
    unknown = [name for name in wanted if name not in found]
    if unknown and not create:
        names = ", ".join(map(repr, unknown))
        raise MemberRefused(
            f"no user named {names} (add {option} to create "
            f"{'them' if len(unknown) > 1 else 'it'} with no usable password)"
        )
    created = [new_user(name) for name in unknown]
    found.update({u.username: u for u in created})
    return [found[name] for name in wanted], created


def _check(study: Study, role: str, kind: str, group: Group | None, membership) -> None:
    if role not in Role.values:
        raise MemberRefused(f"unknown role {role!r}: choose one of {', '.join(Role.values)}")
    if kind not in Kind.values:
        raise MemberRefused(f"unknown kind {kind!r}: choose one of {', '.join(Kind.values)}")
    if group is not None and group.study_id != study.pk:
        raise MemberRefused(f"group {group.name!r} is not a group of study {study.slug!r}")
    if role == Role.MODERATOR and group is None:
        user = membership.user if membership is not None else None
        if user is None or not study.groups.filter(moderator=user).exists():
            raise MemberRefused("a moderator moderates a group: name the group")
    if group is not None and role != Role.MODERATOR and group.kind != kind:
        raise MemberRefused(
            f"group {group.name!r} is a group of {group.kind}s: a {kind} annotator does not "
            "sit in it (group annotators are of one kind)"
        )


def add_member(study: Study, user, role: str, kind: str, group: Group | None = None) -> list[str]:
    """Make `user` a member of `study` with `role` and `kind` (an existing member's role and
    kind are changed as the members page changes them) and, with `group`, seat them in it:
    the group's moderator for the role moderator, else one of its annotators. Returns what
    changed, in words; ["already a member ..."] when nothing did. Run it in a transaction:
    a refusal part way leaves the earlier steps to be rolled back."""
    membership = Membership.objects.filter(study=study, user=user).first()
    _check(study, role, kind, group, membership)
    done: list[str] = []
    if membership is None:
        if role == Role.MODERATOR:
            _moderate(group, user, done)  # the seat makes them a member, a moderator
        else:
            study.add_member(user, role, kind)
        Membership.objects.filter(study=study, user=user).update(kind=kind)
        done.insert(0, f"added as {role} ({kind})")
    else:
        if role == Role.MODERATOR and group is not None:
            _moderate(group, user, done)
        if membership.role != role:
            set_role(study, user, role)
            done.append(f"role {membership.role} -> {role}")
        if membership.kind != kind:
            Membership.objects.filter(pk=membership.pk).update(kind=kind)
            done.append(f"kind {membership.kind} -> {kind}")
    if group is not None and role != Role.MODERATOR:
        if group.annotators.filter(pk=user.pk).exists():
            done.append(f"already an annotator of group {group.name}")
        else:
            seat_annotator(group, user)
            done.append(f"annotator of group {group.name}")
    if not done or all(d.startswith("already") for d in done):
        done.insert(0, f"already a member ({role}, {kind})")
    return done


def _moderate(group: Group, user, done: list[str]) -> None:
    before = group.moderator
    if before == user:
        done.append(f"already the moderator of group {group.name}")
        return
    set_moderator(group, user)
    replaced = f", replacing {before.username}" if before is not None else ""
    done.append(f"moderator of group {group.name}{replaced}")
