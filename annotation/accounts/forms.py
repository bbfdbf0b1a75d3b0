"""The forms of the members page, and the password reset's."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordResetForm

from ..models import Group, Kind, Role, Study


class InviteForm(forms.Form):
    people = forms.CharField(widget=forms.Textarea, max_length=100_000, strip=False)
    kind = forms.ChoiceField(choices=Kind.choices, initial=Kind.STUDENT)
    group = forms.ModelChoiceField(queryset=Group.objects.none(), required=False)

    def __init__(self, study: Study, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = study.groups.order_by("name")


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
    kind = forms.ChoiceField(choices=Kind.choices)
    # the group a new moderator moderates (the role comes with a group's moderator seat)
    group = forms.ModelChoiceField(queryset=Group.objects.none(), required=False)

    def __init__(self, study: Study, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = study.groups.order_by("name")


class MoveForm(forms.Form):
    """An annotator out of `source` into `target`, or out of the group (no target); into
    `target` alone when no source (adding a member to a group)."""

    source = forms.ModelChoiceField(queryset=Group.objects.none(), required=False)
    target = forms.ModelChoiceField(queryset=Group.objects.none(), required=False)

    def __init__(self, groups, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source"].queryset = groups
        self.fields["target"].queryset = groups

    def clean(self):
        data = super().clean()
        if not self.errors and not (data.get("source") or data.get("target")):
            raise forms.ValidationError("Choose a group.")
        return data


class ResetForm(PasswordResetForm):
    """Django's reset form, also for an invited account that has not set a password yet (its
    invitation lost or expired): owning the address is what a reset proves either way."""

    def get_users(self, email):
        return get_user_model()._default_manager.filter(email__iexact=email, is_active=True)
