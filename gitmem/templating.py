"""Jinja2 templates shipped with gitmem: exports, LLM prompts, web pages and Slack messages.

The templates live in the repository's root ``templates/`` folder, which the wheel installs as
``gitmem/templates``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .concepts import iso
from .techchoice import options_table
from .wording import article, plural

if TYPE_CHECKING:  # jinja2 loads with the first template rendered, not with every command
    import jinja2


def templates_dir() -> Path:
    """The folder holding the templates, installed or in a source checkout."""
    installed = Path(__file__).parent / "templates"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "templates"


@functools.cache
def environment() -> jinja2.Environment:
    """A Jinja2 environment for non-HTML templates (Markdown, prompts, JSON blocks)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=jinja2.select_autoescape(["html", "htm", "xml"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["iso"] = iso
    env.filters["oneline"] = lambda s: " ".join(str(s).split())
    env.filters["plural"] = plural
    env.filters["article"] = article
    # A techchoice's options as a Markdown table, each line indented (for a list item) by the argument.
    env.filters["options_table"] = lambda m, indent=0: "\n".join(
        (" " * indent + line) if line else "" for line in options_table(m).splitlines())
    return env


def render_template(name: str, **context: Any) -> str:
    """Render one template by its path below ``templates/``."""
    return environment().get_template(name).render(**context)
