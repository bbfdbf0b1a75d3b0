"""The split-check presets' vocabulary (taxonomy/presets/split-check.json and
split-check-entries.json): the codes the intake's split check writes its cards for and the
agreement measures its accuracy by. A neutral module so that neither unit imports the other."""

from __future__ import annotations

# split points (preset `split-check`): the consensus that says the boundary is right
BOUNDARIES_PRESET = "split-check"
RIGHT_SPLIT = "right_split"
# entries (preset `split-check-entries`): one pick-one axis, `entry`, and its right answer
ENTRIES_PRESET = "split-check-entries"
ENTRY_AXIS = "entry"
CORRECT = "correct"
