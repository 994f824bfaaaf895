"""What every ``gitmem`` command shares: the group, the service, --namespace, --json, errors.

The group loads each command's module only when that command runs (or is asked for its help):
``gitmem --version`` imports click and nothing of the service, ``gitmem show`` not the web app,
Celery, the MCP SDK or the Slack bot. See :class:`Group`.
"""

from __future__ import annotations

import functools
import getpass
import importlib
import json
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import GitmemError, InvalidInput

if TYPE_CHECKING:  # the service's modules load with the first command that needs them
    from importlib.metadata import EntryPoint

    from ..service import MemoryService
    from ..settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
#: Entry points through which front ends installed beside gitmem add commands (the Slack bot).
COMMANDS_GROUP = "gitmem.commands"
log = logging.getLogger(__name__)


class Group(click.Group):
    """A click group whose commands load on demand, and which turns gitmem errors into one line.

    ``lazy`` maps a command's name to the module under ``gitmem.cli`` that defines it and the
    summary ``--help`` lists it with, so listing the commands imports none of them (a test holds
    the summaries equal to the commands' own). Commands of the ``gitmem.commands`` entry points
    are looked up only when a name is not gitmem's own, or when every command is listed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, tuple[str, str]] = {}
        self._points: dict[str, EntryPoint] | None = None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a gitmem error prints ``error: ...`` on stderr and exits with its code."""
        try:
            return super().invoke(ctx)
        except GitmemError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)

    def entry_points(self) -> dict[str, EntryPoint]:
        """The commands other packages add (scanning installed packages costs milliseconds: once)."""
        if self._points is None:
            from importlib.metadata import entry_points

            self._points = {p.name: p for p in entry_points(group=COMMANDS_GROUP)}
        return self._points

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, gitmem's own and those of entry points, none of them loaded."""
        return sorted(set(self.commands) | set(self.lazy) | set(self.entry_points()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, importing the module that defines it on first use."""
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in self.lazy:
            importlib.import_module(f"{__package__}.{self.lazy[cmd_name][0]}")  # registers it on this group
            command = self.commands.get(cmd_name)
        if command is None and cmd_name not in self.lazy:
            command = self._load_point(cmd_name) or self._load_unlisted(cmd_name)
        return command

    def _load_unlisted(self, name: str) -> click.Command | None:
        """A command missing from ``lazy`` (added to a module but not to the table): import every module."""
        import pkgutil

        for module in pkgutil.iter_modules(sys.modules[__package__].__path__):
            importlib.import_module(f"{__package__}.{module.name}")
        return self.commands.get(name)

    def _load_point(self, name: str) -> click.Command | None:
        point = self.entry_points().get(name)
        if point is None:
            return None
        try:
            command = point.load()
        except ImportError as exc:  # a front end whose dependencies are missing adds nothing
            log.warning("command %s is unavailable: %s", name, exc)
            return None
        self.add_command(command, name)
        return command  # type: ignore[no-any-return]

    def summary(self, name: str) -> str:
        """What ``--help`` says of command ``name`` without loading it."""
        command = self.commands.get(name)
        if command is not None:
            return command.get_short_help_str(limit=1 << 16)
        if name in self.lazy:
            return self.lazy[name][1]
        point = self.entry_points()[name]
        return f"Added by {point.module.partition('.')[0]}: see `gitmem {name} --help`."

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands with their summaries, as click does, loading none of them."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, click.Command(name, help=self.summary(name)).get_short_help_str(limit)) for name in names
                if name not in self.commands or not self.commands[name].hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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
    from ..settings import Settings

    return Settings.from_env()


@functools.cache
def service() -> MemoryService:
    """The one service object every command calls."""
    from ..service import build_service

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
