"""The API's parsers, apart from its views' helpers (common.py): REST_FRAMEWORK's
DEFAULT_PARSER_CLASSES names one, and DRF imports it while rest_framework.views is still
loading, so this module imports nothing of the views (common.py does, through DRF)."""

from __future__ import annotations

import io

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from ..jsondepth import MAX_DEPTH, too_deep


class JSONBodyParser(JSONParser):
    """DRF's JSON parser (settings.REST_FRAMEWORK's default, and the JSON-only views'), but a
    body nested deeper than the importers' limit is a 400 naming the body before json reads
    it: json recurses once per level, and 1,000 levels were a RecursionError, a 500. The
    body's size is bounded before any parser runs (DATA_UPLOAD_MAX_MEMORY_SIZE)."""

    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read()
        if too_deep(body):
            raise ParseError(f"The JSON body is nested deeper than {MAX_DEPTH} levels.")
        return super().parse(io.BytesIO(body), media_type, parser_context)
