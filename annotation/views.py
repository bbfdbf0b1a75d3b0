from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Study


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if request.user.is_superuser:
        studies = Study.objects.all()
    else:
        studies = Study.objects.filter(memberships__user=request.user)
    return render(request, "annotation/home.html", {"studies": studies.order_by("slug")})
