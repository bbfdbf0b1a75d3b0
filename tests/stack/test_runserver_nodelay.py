"""`make run` serves with the project's runserver (config/management/commands/runserver.py),
whose connections have TCP_NODELAY: Django's server writes headers and body apart, and with
Nagle's algorithm the body waited for the browser's delayed acknowledgement, up to 40 ms on
every card request (benchmarks/card_keys_bench.py: a 404 took 52 ms through runserver and
10 ms through gunicorn; 9 ms with this)."""

from __future__ import annotations

import socket

from django.core.management import get_commands, load_command_class

from config.management.commands.runserver import Command, NoDelayWSGIServer


def test_manage_py_runserver_is_the_projects_and_keeps_whitenoises_behaviour():
    assert get_commands()["runserver"] == "config"
    command = load_command_class("config", "runserver")
    assert isinstance(command, Command)
    assert command.server_cls is NoDelayWSGIServer
    # whitenoise's: static files are WhiteNoise's, not the development server's
    parser = command.create_parser("manage.py", "runserver")
    assert parser.parse_args([]).use_static_handler is False


def test_its_connections_send_without_waiting_for_an_acknowledgement():
    server = NoDelayWSGIServer(("127.0.0.1", 0), None)
    try:
        client = socket.create_connection(server.server_address)
        connection, _address = server.get_request()
        try:
            assert connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            connection.close()
            client.close()
    finally:
        server.server_close()
