"""The ``gitmem`` command: a thin click wrapper over :class:`gitmem.service.MemoryService`.

Each front end adds its commands in a module of its own; :data:`COMMANDS` says which module
defines which command, so a command imports its module only when it runs (``gitmem --version``
and ``gitmem --help`` import none). Front ends installed beside gitmem (the Slack bot's
``gitmem slack``) add theirs through the ``gitmem.commands`` entry points, loaded the same way.
A new command goes in this table too (``tests/test_cli_imports.py`` checks it).
"""

from __future__ import annotations

from .base import COMMANDS_GROUP, main

__all__ = ["COMMANDS", "COMMANDS_GROUP", "main"]

#: Command name -> (module under gitmem.cli that defines it, the summary ``--help`` shows).
COMMANDS: dict[str, tuple[str, str]] = {
    "agent": ("agent", "Connect a coding agent to gitmem: its MCP entry and a hook that loads memories at session "
                       "start."),
    "amend": ("memory", "Change a memory's TEXT ('-' for standard input), title, type, tags, paths or tenure."),
    "backup": ("maintenance", "Back up the namespaces, API keys and session secret into DEST, a new or empty folder."),
    "choose": ("memory", "Make OPTION the active one of technology choice MEMORY_ID, for a reason."),
    "consolidate": ("consolidate", "Merge related memories and tidy their lifecycle on a branch, then open a review."),
    "context": ("memory", "Print the memory block an agent should load for FILES: memories about them first."),
    "credential": ("credential", "A git credential helper: answer git with the gitmem key for the server it asks "
                                 "about."),
    "conversations": ("ingest", "Show ingestion: messages taken, repeats, masked secrets, buffers and their state."),
    "export": ("memory", "Export a namespace for agents and other tools."),
    "feedback": ("memory", "Confirm, reject (TEXT: why), discuss (TEXT: the comment) or amend (TEXT: the new text) "
                           "a memory."),
    "fold": ("memory", "Fold recorded uses (from recall) into the memory files in one commit."),
    "forget": ("memory", "Archive a memory (kept, never recalled); --purge deletes its file (git history keeps it)."),
    "import": ("memory", "Import another memory store at PATH, in one commit that `gitmem revert` undoes whole."),
    "ingest": ("ingest", "Read a conversation and extract what it says worth remembering, as pending memories."),
    "init": ("memory", "Create a namespace's memory repository (does nothing if it exists)."),
    "key": ("server", "API keys: make, list and revoke them (roles: reader, writer, reviewer, admin)."),
    "log": ("memory", "The commits of a namespace, or the history of one memory, newest first."),
    "maintain": ("maintenance", "Pack each namespace's repository: loose objects into one pack, refs into "
                                "packed-refs."),
    "mcp": ("mcp", "Serve the MCP server over standard input and output, on the local $GITMEM_HOME."),
    "mirror": ("sync", "Mirrors: push a namespace's main and review branches to upstream remotes after every "
                       "change."),
    "purge": ("purge", "Ask to purge a memory from the namespace's whole history: opens a review an admin approves."),
    "recall": ("memory", "Find memories for QUERY and/or the files you work on, best first."),
    "remember": ("memory", "Remember TEXT ('-' reads it from standard input) through the write gate."),
    "restore": ("memory", "Bring a memory back to how it was at COMMIT (see `gitmem log MEMORY_ID`)."),
    "restore-backup": ("maintenance", "Restore a backup made by `gitmem backup` into $GITMEM_HOME, which must not "
                                      "hold any of it."),
    "revert": ("memory", "Undo one commit with a new commit; refuses (and changes nothing) if it would conflict."),
    "review": ("consolidate", "Reviews of proposed changes (consolidation runs, amendments): list, show, decide."),
    "serve": ("server", "Serve the web app: API, webhook, review pages and git over HTTP."),
    "show": ("memory", "Show one memory with all its fields (for one merged away: the memory that replaced it)."),
    "status": ("memory", "Counts by state, type and potency tier."),
    "sync": ("sync", "Sync a clone, or a plain folder of Markdown memories, with a gitmem server."),
    "vectors": ("maintenance", "Embed every memory that has no sentence vector yet (derived state under state/)."),
    "worker": ("consolidate", "Run a Celery worker for consolidation and maintenance (embedded broker unless "
                              "GITMEM_BROKER_URL is set)."),
}
main.lazy.update(COMMANDS)
