"""What every ``gitmem`` command shares: the group, the service, --namespace, --json, errors."""

from __future__ import annotations

import functools
import getpass
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import GitmemError, InvalidInput
from ..service import MemoryService, build_service
from ..settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


class Group(click.Group):
    """A click group that turns gitmem errors into one line on stderr and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a gitmem error prints ``error: ...`` on stderr and exits with its code."""
        try:
            return super().invoke(ctx)
        except GitmemError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gitmem")
def main() -> None:
    """gitmem: the team's long-term memory for coding agents, kept in Git.

    Memories are Markdown files in a bare Git repository per namespace under $GITMEM_HOME
    (default ~/.local/share/gitmem). Every change is one commit.
    """


@functools.cache
def settings() -> Settings:
    """Settings from the environment (read once per command)."""
    return Settings.from_env()


@functools.cache
def service() -> MemoryService:
    """The one service object every command calls."""
    return build_service(settings())


def namespace_option(func: F) -> F:
    """Add ``--namespace/-n`` (default: $GITMEM_DEFAULT_NAMESPACE or ``default``)."""
    return click.option(
        "--namespace", "-n", default=None, metavar="NS",
        help="Namespace (one repository each). Default: default.",
    )(func)


def json_option(func: F) -> F:
    """Add ``--json`` to a command that prints data."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def ns_name(namespace: str | None) -> str:
    """The namespace given with ``--namespace``, or the default when the option was left out."""
    if namespace is None:
        return settings().default_namespace
    if not namespace.strip():
        raise InvalidInput("--namespace is empty: give a namespace name, or leave the option out "
                           f"to use {settings().default_namespace!r}")
    return namespace


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON, or call ``human`` to print it for people."""
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        human()


def read_text_arg(text: str) -> str:
    """``-`` reads the text from standard input (as bytes, so invalid UTF-8 is caught)."""
    if text == "-":
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"standard input is not valid UTF-8 (byte {exc.start})") from exc
    return text


def actor_of(actor: str | None) -> str:
    """Who acts from the command line: ``--actor`` when given, else the local user (the one rule for every command)."""
    return actor or getpass.getuser()
