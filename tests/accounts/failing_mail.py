"""An email backend whose server refuses every connection (the SMTP server is down)."""

from __future__ import annotations

from django.core.mail.backends.base import BaseEmailBackend


class Backend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise ConnectionRefusedError(111, "Connection refused")
