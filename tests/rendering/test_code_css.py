"""The colours of highlighted code are readable: every text colour of static/css/code.css has
a contrast of at least 4.5:1 (WCAG AA, normal text) on every background the file sets."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from annotation.charts import contrast

CODE_CSS = Path(settings.BASE_DIR) / "static" / "css" / "code.css"
AA = 4.5


def declared(prop: str, css: str) -> set[str]:
    return set(re.findall(rf"(?<![\w-]){prop}\s*:\s*(#[0-9a-fA-F]{{3,6}})\b", css))


def test_the_contrast_check_knows_a_failing_pair():
    assert round(contrast("#000", "#fff"), 1) == 21.0
    assert contrast("#999999", "#f2f4f7") < AA


def test_every_code_colour_meets_wcag_aa_on_every_code_background():
    css = CODE_CSS.read_text()
    colours, backgrounds = declared("color", css), declared("background", css)
    assert len(colours) > 10 and "#f2f4f7" in backgrounds
    weak = sorted(
        (round(contrast(c, bg), 2), c, bg)
        for c in colours
        for bg in backgrounds
        if contrast(c, bg) < AA
    )
    assert weak == []
