"""The usage log: memory uses recorded as they happen, folded into the repository later (SQLite).

It records reads (recall hits) so a read never costs a commit; :meth:`MemoryService.fold_usage`
folds it into the files in one commit. Losing it loses no memory content, only some potency boosts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from .sqlitedb import connect as _connect


class UsageLog:
    """Append-only record of memory uses, folded into the repository later."""

    def __init__(self, path: Path) -> None:
        self.db = _connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS uses(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, at TEXT NOT NULL)")
        self.db.execute("CREATE INDEX IF NOT EXISTS uses_id ON uses(id)")

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def record(self, memory_ids: Iterable[str], at: datetime) -> None:
        """Log one use of each of ``memory_ids`` at ``at``."""
        stamp = at.isoformat()
        self.db.executemany("INSERT INTO uses(id, at) VALUES(?, ?)", [(m, stamp) for m in memory_ids])

    def pending(self, up_to: int | None = None, ids: Iterable[str] | None = None) -> dict[str, tuple[int, datetime]]:
        """Uses not yet folded: memory id -> (days with a use, last use), for every memory or only ``ids``.

        A memory delivered ten times in one day was used once that day: uses count by day (UTC).
        """
        sql = "SELECT id, COUNT(DISTINCT substr(at, 1, 10)), MAX(at) FROM uses WHERE 1=1"
        args: list[Any] = []
        if up_to is not None:
            sql += " AND seq <= ?"
            args.append(up_to)
        if ids is not None:
            wanted = list(ids)
            if len(wanted) > 500:  # beyond this one pass over the log is cheaper than lookups
                keep = set(wanted)
                return {k: v for k, v in self.pending(up_to).items() if k in keep}
            sql += f" AND id IN ({','.join('?' * len(wanted))})"
            args += wanted
        rows = self.db.execute(sql + " GROUP BY id", args).fetchall()
        return {r[0]: (r[1], datetime.fromisoformat(r[2])) for r in rows}

    def high_water(self) -> int:
        """The sequence number of the latest use, 0 for an empty log: fold up to it, then clear."""
        row = self.db.execute("SELECT MAX(seq) FROM uses").fetchone()
        return int(row[0] or 0)

    def clear(self, up_to: int) -> None:
        """Drop the uses up to ``up_to`` once they are folded into the repository."""
        self.db.execute("DELETE FROM uses WHERE seq <= ?", (up_to,))

    @contextmanager
    def folding(self) -> Iterator[None]:
        """Hold the log's write lock from reading the uses to clearing them.

        Two processes folding at once then do not both count the same uses (new uses wait; reads do not).
        """
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
