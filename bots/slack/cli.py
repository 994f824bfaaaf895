"""``gitmem slack``: run the Slack bot on its own, over Socket Mode or plain HTTP.

Registered with the ``gitmem`` command through the ``gitmem.commands`` entry point.
"""

from __future__ import annotations

import click

from gitmem.service import build_service
from gitmem.settings import Settings


@click.command("slack")
@click.option("--http", "http_port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve POST /slack/events on this port instead of using Socket Mode.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on with --http.")
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256),
              help="Threads answering Slack's requests with --http.")
def slack_command(http_port: int | None, host: str, threads: int) -> None:
    """Run the Slack bot: /mem, "remember:" messages, watched channels, "Remember this" and review buttons.

    By default it connects over Socket Mode, for teams that cannot expose a URL: set
    SLACK_BOT_TOKEN and SLACK_APP_TOKEN (an xapp- token with connections:write). With --http it
    serves POST /slack/events itself, on gunicorn as `gitmem serve` does, and needs
    SLACK_SIGNING_SECRET instead; `gitmem serve` mounts the same endpoint in the web app when the
    token and signing secret are set.
    Channels map to namespaces with GITMEM_SLACK_CHANNEL_NAMESPACES="C123=team,C456=ops".
    Channels watched with `/mem watch` are buffered here and distilled by the workers: run
    `gitmem worker --beat` beside it unless `gitmem serve` runs one.
    """
    from .app import create_flask_app, socket_mode_handler

    # Built like every front end's service: memories remembered here trigger consolidation too.
    service = build_service(Settings.from_env())
    if http_port is None:
        handler = socket_mode_handler(service)
        click.echo("gitmem slack: connecting to Slack over Socket Mode (Ctrl-C to stop)", err=True)
        # slack_bolt leaves start() unannotated.
        handler.start()  # type: ignore[no-untyped-call]
        return
    from gitmem.serving import check_address, serve

    create_flask_app(service)  # says now, in one line, what is not configured
    check_address(host, http_port)
    click.echo(f"gitmem slack: serving http://{host}:{http_port}/slack/events", err=True)
    # The production server the web app uses, not Flask's development one; each worker process
    # builds its own app and service after the fork (SQLite handles do not survive one).
    serve(lambda: create_flask_app(build_service(Settings.from_env())), host=host, port=http_port,
          workers=1, threads=threads, name="gitmem-slack")
