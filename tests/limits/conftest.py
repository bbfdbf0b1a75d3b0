"""Fixtures of the limits' tests: the discussion's (a disputed card of group A)."""

from tests.api.conftest import cards_setup  # noqa: F401
from tests.discussion.conftest import disputed, group_a, turns_a  # noqa: F401
