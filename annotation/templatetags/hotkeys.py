from __future__ import annotations

from collections.abc import Sequence

from django import template

from annotation.hotkeys import with_keys
from taxonomy.models import Type

register = template.Library()


@register.simple_tag
def keyed(types: Sequence[Type]) -> Sequence[Type]:
    """`{% keyed types as types %}`: every type with its `.key` (annotation.hotkeys)."""
    return with_keys(types)
