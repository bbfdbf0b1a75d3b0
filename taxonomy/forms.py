from __future__ import annotations

from django import forms

from .models import Axis


class ProposalForm(forms.Form):
    """A new type suggested on a card: all three texts are needed for the experts to judge."""

    name = forms.CharField(max_length=200, error_messages={"required": "Give the type a name."})
    definition = forms.CharField(
        error_messages={"required": "Say what the type means (a definition)."}
    )
    reason = forms.CharField(
        error_messages={"required": "Say why none of the existing types fits."}
    )
    axis = forms.CharField(required=False)

    def __init__(self, *args, axes: list[Axis], **kwargs):
        super().__init__(*args, **kwargs)
        self.axes = {a.code: a for a in axes}

    def clean_axis(self) -> Axis | None:
        code = self.cleaned_data.get("axis") or ""
        if not code:
            return None  # the first axis
        if code not in self.axes:
            raise forms.ValidationError(f"Unknown axis {code!r}.")
        return self.axes[code]


class DecisionForm(forms.Form):
    action = forms.ChoiceField(choices=[("accept", "accept"), ("map", "map"), ("reject", "reject")])
    category = forms.CharField(required=False)  # accept: an existing category name, or "Proposed"
    code = forms.CharField(required=False)  # map: an existing type code
    reason = forms.CharField(required=False)

    def clean(self):
        data = super().clean()
        if data.get("action") == "map" and not data.get("code"):
            raise forms.ValidationError("Choose the existing type to map the proposal to.")
        if data.get("action") == "reject" and not (data.get("reason") or "").strip():
            raise forms.ValidationError("A reason is required to reject a proposal.")
        return data
