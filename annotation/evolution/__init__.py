"""Taxonomy evolution (issue 11 point 4): a study moves to a new taxonomy version derived
from its own (TaxonomyVersion.derive: add, rename, merge, split), and its labels go with it.

    preview(study, spec) -> dict        what evolve would do, nothing written
    evolve(study, spec, by) -> move     derive the version and move the study, one transaction
    move_study(study, new, by) -> move  carry every current label and consensus to `new`
    pending_labels(user, study)         the user's labels waiting for a split side
    answer_split(row, user, chosen)     the annotator's own choice of side(s)
    upgrade_study(study, by) -> [moves] a study on a preset's earlier version moved to its
                                        latest (manage.py upgrade_preset)

The rules, in the house's words:
- Never overwritten. Every current annotation, consensus and study-level gold of the study
  is retired (is_current off, `retired_by` the move) and carried to a new row under the new
  version (`carried_from`). The retired rows are the old version's labels as they stood:
  the old version's report reads exactly them (agreement.data, version=...), so it stays
  what it was, and round-1 statistics stay computable on either version.
- A carried label is a function of its own label only: each code goes where the mapping
  says (kept, renamed: itself; merged: the merge's type; recast: one type on each of the
  axes that replaced its axis, all of them, e.g. outcome's code_or_task_damage becomes
  damage_severity DS2 and damage_locus code_or_task). A split type's label is nobody's
  to decide but its annotator's: the carried row keeps the rest of the set and names the
  split codes in `split_pending`; it is no record of any statistic, the card's round waits
  for it (CardState.advance), and its annotator chooses the side(s) on the "Taxonomy
  changes" page (answer_split). Nothing is guessed and nothing is dropped.
- A consensus (or a lead's study-level gold) with a split type is not carried: the card
  goes to its group's moderator (escalated; the lead moderates a group without one), who
  decides it on the new version; an overlap card's study gold is decided again by the lead
  once its groups have. The pages say so before and after.
- One move at a time per study, from its own version; a move waits while labels of the
  last one still wait for a split side (their choices are of that version).
"""

from .move import (
    Carrier,
    EvolutionError,
    accept_preview,
    describe_changes,
    evolve,
    move_study,
    pending_in,
    plan_counts,
    preview,
    summary,
)
from .preset import upgrade_preview, upgrade_study
from .sides import SplitQuestion, answer_split, pending_labels, split_questions

__all__ = [
    "Carrier",
    "EvolutionError",
    "SplitQuestion",
    "accept_preview",
    "answer_split",
    "describe_changes",
    "evolve",
    "move_study",
    "pending_in",
    "pending_labels",
    "plan_counts",
    "preview",
    "split_questions",
    "summary",
    "upgrade_preview",
    "upgrade_study",
]
