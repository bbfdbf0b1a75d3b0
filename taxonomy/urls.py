from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("s/<slug:slug>/cards/<int:turn_id>/propose/", views.propose, name="propose"),
    path("s/<slug:slug>/proposals/", views.proposals, name="proposals"),
    path(
        "s/<slug:slug>/proposals/<int:proposal_id>/decide/",
        views.proposal_decide,
        name="proposal_decide",
    ),
]
