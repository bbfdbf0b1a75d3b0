"""What a reader who annotates episodes may not read of the others' (issue 21): access.py's
round-1 blindness and the session page's rules said for lists of a whole study (the
exports, the API's lists). Here rather than in access.py, as it replays the rounds
(episodes/rounds.py), and this package already reads access.py."""

from __future__ import annotations

from ..access import episodes_hidden_in_queue, judges_visible_to
from ..models import Assignment, CoverageRating, Group, Study, Unit
from . import rounds


def episodes_round1_hidden_from(user, study: Study) -> set[int]:
    """The ids of the episodes of `study` on which `user` may not see anyone else's
    judgements (nor a consensus, which would tell them): the cards' round1_hidden_from, said
    of episodes (one rule: rounds.round1_hidden_episodes, which the flags and times pages
    ask too). Exports and the API's lists drop other annotators' rows on these."""
    return rounds.round1_hidden_episodes(user, study)


def episodes_unseen_by(user, study: Study) -> set[int]:
    """The ids of the episodes of `study` people wrote that `user`, annotating their session
    in an episode group, may not see yet (episodes_annotator_sees: another annotator's before
    `user` rated the session's coverage, anyone's outside the group): exports and the API
    leave them out for `user`."""
    if not getattr(user, "is_authenticated", False):
        return set()
    groups = Group.objects.filter(study=study, annotators=user, unit=Unit.EPISODE)
    return {pk for pk, _ in episodes_hidden_in_queue(user, groups)}


def coverage_hidden_from(user, study: Study) -> set[int]:
    """The ids of the sessions (conversations) `user` annotates in an episode group and has
    not rated there yet: the others' coverage ratings of them (in any group) stay out of
    what `user` reads (the session page never shows another's rating; "how much did the
    extractor miss?" is each annotator's own judgement until they have given theirs)."""
    if not getattr(user, "is_authenticated", False):
        return set()
    sessions = set(
        Assignment.objects.filter(
            group__study=study, group__annotators=user, group__unit=Unit.EPISODE
        ).values_list("conversation_id", "group_id")
    )
    rated = set(
        CoverageRating.objects.filter(
            annotator_id=user.pk, is_current=True, group__study=study
        ).values_list("conversation_id", "group_id")
    )
    return {conversation for conversation, _ in sessions - rated}


def machines_visible_to(user, study: Study, hidden: set[int] | None = None) -> bool:
    """Whether `user` may read what an extraction run's model said of its episodes (its
    verdict, labels and confidence) and the machine judges' judgements: whoever may see the
    study's machine judges (access.judges_visible_to: its leads, not while the agreement lock
    applies to them), unless they judge an episode whose round 1 is under way (the run's
    verdict would anchor their judgement): never annotators nor moderators. `hidden`:
    episodes_round1_hidden_from's answer, when the caller has it."""
    if not judges_visible_to(user, study):
        return False
    if hidden is None:
        hidden = episodes_round1_hidden_from(user, study)
    return not hidden
