"""What every API view shares: the documented error answers, strict query parameters and
pagination.

Query parameters are read through a serializer (`read_query`), which is also what the schema
documents (`parameters=[TheQuerySerializer]`): a value that is not of the documented type
(`?done=null`, `?round=0`, `?page=abc`), a parameter given twice, or an object-valued one
(`?round[a]=1`, deepObject style) is a 400 naming the parameter, never a 500 or a silent
default."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Paginator
from django.db.models import QuerySet
from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, views
from rest_framework.exceptions import (
    AuthenticationFailed,
    NotAuthenticated,
    ParseError,
    ValidationError,
)
from rest_framework.fields import empty
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from .. import conversation_keys
from ..limits import TextLimit
from .throttling import FailedAuthentications

ERRORS = {
    400: OpenApiResponse(
        description="Invalid query parameter or body: {name: [what is wrong]}, each "
        "parameter or field named"
    ),
    401: OpenApiResponse(description="No token, or not a valid one"),
    403: OpenApiResponse(
        description="A member whose role does not allow this, or round-1 blindness: the "
        "reason is in `detail`"
    ),
    404: OpenApiResponse(
        description="No such study (or not a member of it), no such object in it, not one "
        "of its leads where leads only, or no such page"
    ),
    409: OpenApiResponse(description="The state does not allow it (the reason in `detail`)"),
    429: OpenApiResponse(description="Too many requests: throttled, retry later"),
}


def exception_handler(exc, context):
    """DRF's answers (settings.REST_FRAMEWORK's EXCEPTION_HANDLER), and: every 401 counts
    against its address (annotation/api/throttling.py); a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE is a 400 saying so, not Django's bare HTML one."""
    if isinstance(exc, NotAuthenticated | AuthenticationFailed):
        FailedAuthentications().count(context["request"])
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = ParseError(f"The request body is larger than {limit:,} bytes.")
    return views.exception_handler(exc, context)


def responses(ok: dict, *codes: int) -> dict:
    """An operation's responses: `ok` ({status: serializer}) plus the errors named, and
    always 401 (no token) and 429 (throttled)."""
    return {**ok, **{c: ERRORS[c] for c in sorted({*codes, 401, 429})}}


class PageQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(
        required=False, min_value=1, help_text="Page number, from 1 (100 results a page)"
    )


def read_query(request: Request, serializer_class: type[serializers.Serializer]) -> dict:
    """The query parameters `serializer_class` declares, validated (a 400 naming each bad
    one); unknown parameters are ignored, except an object-valued form of a declared one."""
    names = set(serializer_class().fields)
    errors: dict[str, list[str]] = {}
    for key in request.query_params:
        base = re.split(r"[\[.]", key, maxsplit=1)[0]
        if base in names and key != base:
            errors[base] = [f"must be a single value, not an object ({key!r})"]
        elif key in names and len(request.query_params.getlist(key)) > 1:
            errors[key] = ["must be given once"]
    if errors:
        raise ValidationError(errors)
    # an empty value is a value: `?done=` is a 400, as the schema says (no minLength 0)
    data = {k: request.query_params[k] for k in names if k in request.query_params}
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def conversation_named(study, name: str, field: str = "conversation") -> int | None:
    """The id of the study's conversation a query's `field` names (its key, or an external
    id no other has: conversation_keys.match), None for none; a 400 naming their keys when
    the id is several conversations'."""
    found = conversation_keys.find(study.conversations.visible(), [name])[name]
    if len(found) > 1:
        raise ValidationError({field: [conversation_keys.ambiguous(name, found)]})
    return found[0].pk if found else None


def paginate(
    request: Request,
    queryset: QuerySet,
    serializer_class,
    *,
    load=None,
    count: int | None = None,
    **context,
) -> Response:
    """One page of `queryset` (`?page=`, checked by read_query first: 400 if it is not a
    positive integer, 404 past the last page). `load`: the page is found over the ids of
    `queryset` alone, then `load(ids)` reads its rows with what they show (joins, prefetches):
    a join done before the ORDER BY's LIMIT would be done for every row of the list.
    `count`: the number of rows, when it is known without counting them (kept figures)."""
    read_query(request, PageQuerySerializer)
    paginator = PageNumberPagination()
    if count is not None:
        paginator.django_paginator_class = _counted(count)
    if load is None:
        page = paginator.paginate_queryset(queryset, request)
    else:
        ids = paginator.paginate_queryset(queryset.values_list("pk", flat=True), request)
        rows = {row.pk: row for row in load(ids)}
        page = [rows[pk] for pk in ids]
    data = serializer_class(page, many=True, context=context).data
    return paginator.get_paginated_response(data)


def _counted(count: int) -> type[Paginator]:
    """A Paginator whose number of rows is `count`, known beforehand."""

    class Counted(Paginator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.__dict__["count"] = count  # Paginator.count is a cached property

    return Counted


def page_of(serializer_class) -> type[serializers.Serializer]:
    """The schema of a page of `serializer_class`'s objects (count, next, previous, results)."""
    name = serializer_class.__name__.removesuffix("OutputSerializer") + "PageSerializer"
    return type(
        name,
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
        },
    )


def job_url(request: Request, job) -> str:
    return reverse("api-job", args=[job.study.slug, job.pk], request=request)


# -- strict JSON fields: a value of another JSON type is a 400, as the schema says (DRF's own
# fields coerce: 0 to "0", "true" to True, "3" to 3). Multipart inputs keep DRF's fields:
# every multipart value is a string.


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# -- text: every string an input takes has its limit, and the schema shows it as applied

# JSON Schema: `not` a text holding a NUL (not a pattern, which drf-spectacular would wrap
# in a oneOf with "" where blank is allowed: "" would match both), and a `pattern` asking
# for a character other than a blank
NO_NUL = {"pattern": "\\u0000"}
NOT_BLANK = "\\S"


class TextField(StrictCharField):
    """A string input and its limit: a `kind` of free text (annotation/limits.py, from the
    settings) or the `max_length` of the column it is compared with. The schema says what
    the server refuses: over `maxLength`, counted on the text as sent (DRF counted it
    trimmed, so a text padded with blanks passed longer); a NUL character, which the
    database cannot store (`not`); where blank is refused, blanks only, which are trimmed
    to nothing (`pattern`), and "" (`minLength: 1`)."""

    def __init__(self, *, kind: str | None = None, **kwargs):
        if (kind is None) == ("max_length" not in kwargs):
            raise TypeError("a TextField takes a kind or a max_length")
        if kind is not None:
            kwargs["validators"] = [*kwargs.get("validators", ()), TextLimit(kind)]
        if not kwargs.get("allow_blank", False):
            kwargs.setdefault("min_length", 1)
        super().__init__(**kwargs)

    def run_validation(self, data=empty):
        value = super().run_validation(data)
        if isinstance(data, str) and isinstance(value, str) and len(value) < len(data):
            self.run_validators(data)  # trimmed: the limits count what was sent
        return value


class TextFieldExtension(OpenApiSerializerFieldExtension):
    target_class = TextField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        schema["not"] = NO_NUL
        if not self.target.allow_blank:
            schema["pattern"] = NOT_BLANK
        return schema


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class ClosedSerializer(serializers.Serializer):
    """An input that refuses the fields it does not declare (a 400 naming them: a typo is
    not silently ignored), and says so in the schema (additionalProperties: false)."""

    def to_internal_value(self, data):
        if hasattr(data, "keys"):
            unknown = sorted(set(data.keys()) - set(self.fields))
            if unknown:
                raise ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class ClosedSerializerExtension(OpenApiSerializerExtension):
    target_class = ClosedSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema
