from __future__ import annotations

from django import forms

from taxonomy.models import Type


class AnnotationForm(forms.Form):
    """A card's labels. Either some types, or "no smell" (an empty set on purpose); nothing
    at all is refused, so a stray Enter never records "no smell" by accident."""

    types = forms.MultipleChoiceField(required=False)
    no_smell = forms.BooleanField(required=False)
    note = forms.CharField(required=False, widget=forms.Textarea)
    evidence = forms.CharField(required=False, widget=forms.Textarea)
    confidence = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[("", "—")] + [(str(i), str(i)) for i in range(1, 6)],
    )

    def __init__(self, *args, types: list[Type], **kwargs):
        super().__init__(*args, **kwargs)
        self.taxonomy_types = {t.code: t for t in types}
        self.fields["types"].choices = [(t.code, t.name) for t in types]

    def clean(self):
        data = super().clean()
        codes = data.get("types") or []
        if data.get("no_smell") and codes:
            raise forms.ValidationError('Choose either types or "no smell", not both.')
        if not data.get("no_smell") and not codes:
            raise forms.ValidationError('Pick at least one type, or "no smell" (key 0).')
        chosen = [self.taxonomy_types[c] for c in codes]
        if chosen:
            try:
                chosen[0].axis.version.check_selection(chosen)
            except ValueError as e:
                raise forms.ValidationError(str(e)) from e
        data["chosen_types"] = chosen
        return data
