from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.accounts.reset_limits import ResetView
from annotation.views import invitation

# The schema answers a logged-in user or a token (SPECTACULAR_SETTINGS' SERVE_PERMISSIONS),
# else 401; the docs page sends a visitor to the login page first.
api_docs = SpectacularSwaggerSplitView.as_view(
    url_name="api-schema", template_name="api/swagger_ui.html"
)


def favicon(request):
    """/favicon.ico, which a browser asks for on a page that names no icon (the admin's): the
    site's icon, not a 404 in the console."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


# Accounts without the admin: password reset (Django's views, the app's templates; asking for
# a reset is rate-limited, annotation/accounts/reset_limits.py) and the invitation's
# set-password link (annotation/accounts/)
accounts = [
    path(
        "password-reset/",
        ResetView.as_view(),
        name="password_reset",
    ),
    path(
        "password-reset/sent/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("invitation/<str:token>/", invitation.accept, name="accept_invitation"),
]

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/", include(accounts)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", login_required(api_docs), name="api-docs"),
    path("api/", include("annotation.api.urls")),
    path("", include("annotation.urls")),
]
