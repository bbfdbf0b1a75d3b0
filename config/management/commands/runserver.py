"""`runserver` (what `make run` serves with) answering without a 40 ms stall per request.

Django's development server writes a response's headers and its body to the socket apart.
With Nagle's algorithm on, the body then waits for the browser to acknowledge the headers,
and the browser delays that acknowledgement by up to 40 ms: every htmx request of the card
(next, previous, submit) took about 40 ms more than the view. TCP_NODELAY on each accepted
connection sends both at once. Everything else is the runserver below this one in
INSTALLED_APPS (whitenoise's, which leaves static files to WhiteNoise, then Django's)."""

from __future__ import annotations

import socket

from django.core.servers.basehttp import WSGIServer
from whitenoise.runserver_nostatic.management.commands.runserver import Command as Runserver


class NoDelayWSGIServer(WSGIServer):
    def get_request(self):
        connection, address = super().get_request()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


class Command(Runserver):
    server_cls = NoDelayWSGIServer
