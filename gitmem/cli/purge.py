"""``gitmem purge --history ID``: ask to take a memory out of every commit of the namespace."""

from __future__ import annotations

import click

from ..errors import InvalidInput
from .base import actor_of, emit, json_option, main, namespace_option, ns_name, service


@main.command()
@click.argument("memory_id")
@click.option("--history", is_flag=True, help="Purge it from every commit (needed: that is what purge does).")
@click.option("--reason", required=True, help="Why (a secret, someone's personal data...): kept in the record.")
@click.option("--actor", help="Who asks (default: the local user).")
@namespace_option
@json_option
def purge(memory_id: str, history: bool, reason: str, actor: str | None, namespace: str | None,
          as_json: bool) -> None:
    """Ask to purge a memory from the namespace's whole history: opens a review an admin approves.

    Approving it (`gitmem review approve N`, its page, or the API with an admin key) rewrites
    every commit: the memory's file and discussion leave them all and its text becomes
    "(redacted)" wherever else it appears; a redaction record stays on main and in the audit log;
    mirrors are force-pushed; clones must be made again. To delete only the file (history keeps
    it), use `gitmem forget ID --purge`.
    """
    if not history:
        raise InvalidInput("say --history: purge rewrites every commit of the namespace (to delete only the file, "
                           "with history keeping it, use `gitmem forget ID --purge`)")
    ns = ns_name(namespace)
    review = service().purge_history(ns, memory_id, actor=actor_of(actor), reason=reason)

    def human() -> None:
        click.echo(f"review #{review.number} opened: purge memory {memory_id} from the history of {ns}")
        click.echo(f"an admin approves it with `gitmem review approve {review.number} --namespace {ns}` (or on its "
                   "page); approving rewrites every commit, and clones made before must be made again")

    emit(review.to_dict(), as_json, human)
