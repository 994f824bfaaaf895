"""``gitmem mcp``: the MCP server over stdio, for the agents on this machine."""

from __future__ import annotations

import getpass
import sys
import threading

import click

from .base import main, namespace_option, ns_name, service


@main.command("mcp")
@click.option("--actor", metavar="NAME",
              help="Who the changes made through it are recorded as. Default: your login name.")
@namespace_option
def mcp_command(actor: str | None, namespace: str | None) -> None:
    """Serve the MCP server over standard input and output, on the local $GITMEM_HOME.

    Agents (Claude Code, Cursor, Codex...) start it themselves and call its tools: context,
    recall, remember, feedback, forget, history, reviews and review; and read memories as
    resources gitmem://NS/ID and gitmem://NS/MEMORY.md. Over stdio every namespace is open to the
    agent, as the CLI is to you; --namespace sets the one its calls go to when they name none.
    Over the network, `gitmem serve` answers the same tools at /mcp, with API keys.

    \b
    Example: claude mcp add gitmem -- gitmem mcp --namespace team
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    from ..mcp import LocalAccess, build_server  # the SDK loads only for this command

    name = ns_name(namespace)
    server = build_server(service(), LocalAccess(actor if actor is not None else _login(), name))
    if sys.stdin.isatty():
        click.echo("gitmem mcp speaks MCP on standard input and output: an agent starts it (see "
                   "docs/mcp.md). Ctrl-D stops it.", err=True)
    # The encoder loads while the agent reads the answer to `initialize`; a recall that needs it
    # before then waits for it (the model's own lock), nothing else does.
    threading.Thread(target=service().warm_up, name="gitmem-encoder", daemon=True).start()
    server.run("stdio")


def _login() -> str:
    """The login name, or ``agent`` where the system knows none (a container without a user entry)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "agent"
