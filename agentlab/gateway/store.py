"""The gateway's memory: learners and every call, in one SQLite file that a crash does not lose.

One file, in WAL mode: a call is committed before its reply leaves, so a gateway killed at any
moment (Ctrl-C, SIGKILL, a crash) has counted each completed call once and nothing else. The
commit is in the operating system's hands when it returns (`synchronous=NORMAL`); only a power
cut or a kernel crash could lose the last few calls (never corrupt the file), and in exchange a
commit takes 0.5 ms instead of 5 ms with an fsync each, which capped a class at ~190 calls/s. The CLI
can add or revoke a learner while the server runs (the server reads a learner on every request,
so a revocation takes effect at the next one). A learner's token is stored only as its SHA-256:
the file holds nothing a learner could call with, and never the instructor's key.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from agentlab.llm.base import Usage

TOKEN_PREFIX = "agl-"  # a learner's token: recognisable in a leaked notebook, and never a real key
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
OUTCOMES = ("ok", "refused", "failed")  # answered and billed; refused by a limit; the upstream failed

SCHEMA = """
CREATE TABLE IF NOT EXISTS learners (
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE NOT NULL,
    token_hash TEXT UNIQUE NOT NULL,
    dollars_per_day REAL,
    max_tokens INTEGER,
    models TEXT NOT NULL DEFAULT '',
    per_minute INTEGER,
    concurrent INTEGER,
    dollars_total REAL,
    revoked INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    learner_id INTEGER NOT NULL REFERENCES learners(id),
    at REAL NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    outcome TEXT NOT NULL,
    status INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    dollars REAL NOT NULL DEFAULT 0,
    note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS calls_by_learner_day ON calls(learner_id, day);
CREATE INDEX IF NOT EXISTS calls_by_day ON calls(day);
CREATE TABLE IF NOT EXISTS exchanges (
    call_id INTEGER PRIMARY KEY REFERENCES calls(id),
    learner_id INTEGER NOT NULL REFERENCES learners(id),
    key TEXT NOT NULL,
    request TEXT NOT NULL,
    message TEXT NOT NULL,
    latency REAL NOT NULL DEFAULT 0,
    cut TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS settings (
    name TEXT PRIMARY KEY,
    value REAL
);
"""

REPORT_FIELDS = (
    "learner",
    "model",
    "calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "dollars",
    "refusals",
    "upstream_failures",
    "last_seen",
    "dollars_today",
    "budget_per_day",
)
CLASS_ROW = "(class)"  # the report's last row: the whole class, against the class's budget


@dataclass(frozen=True)
class Learner:
    """A learner as the gateway knows them: a name, their limits, and whether they are revoked."""

    id: int
    name: str
    dollars_per_day: float | None  # None: no daily limit (the instructor said so)
    max_tokens: int | None  # None: no cap on a request's max_tokens
    models: tuple[str, ...]  # empty: any model
    revoked: bool
    per_minute: int | None = None  # None: no limit on requests per minute
    concurrent: int | None = None  # None: no limit on requests at once
    dollars_total: float | None = None  # None: no budget for the whole course


@dataclass(frozen=True)
class Exchange:
    """What a call asked and what came back, for a replay: the request body as the learner sent
    it (and its `llm.replay.wire_key`, taken before any cleaning) and the message (a stream's
    assembled from its events), both already cleared of keys and tokens (`recordings.clean`);
    `cut` says why a stream ended early ("" if it ended whole)."""

    key: str
    request: str
    message: str
    latency: float = 0.0
    cut: str = ""


@dataclass(frozen=True)
class Call:
    """One request a learner made, as it is recorded: what it cost and how it ended."""

    learner_id: int
    model: str
    outcome: str  # one of OUTCOMES
    status: int
    usage: Usage = Usage()
    dollars: float = 0.0
    note: str = ""


def token_hash(token: str) -> str:
    """What the file keeps of a token. A token is 192 random bits, so a plain SHA-256 is enough."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(24)


def utc_day(at: float) -> str:
    """The UTC date a call counts towards: daily limits reset at 00:00 UTC."""
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d")


class Ledger:
    """Learners and calls in the SQLite file at `path` (created if absent). Safe across threads
    (one connection behind a lock) and across processes (SQLite's own locking, with a wait)."""

    def __init__(self, path: str):
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # durable against a killed process
            self._db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise ValueError(f"{self.path}: cannot be used as the gateway's database ({e})") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- learners ---------------------------------------------------------------------------

    def add_learner(
        self,
        name: str,
        dollars_per_day: float | None,
        max_tokens: int | None = None,
        models: tuple[str, ...] = (),
        per_minute: int | None = None,
        concurrent: int | None = None,
        dollars_total: float | None = None,
    ) -> str:
        """Register `name` with these limits; return their token (shown once, never stored)."""
        if not NAME.fullmatch(name):
            raise ValueError(f"learner name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
        token = new_token()
        limits = (dollars_per_day, max_tokens, ",".join(models), per_minute, concurrent, dollars_total)
        row = (name, token_hash(token), *limits, time.time())
        try:
            with self._lock, self._db:
                self._db.execute(
                    "INSERT INTO learners (name, token_hash, dollars_per_day, max_tokens, models, "
                    "per_minute, concurrent, dollars_total, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        except sqlite3.IntegrityError:
            raise ValueError(
                f"a learner named {name!r} exists already (rotate gives them a new token)"
            ) from None
        return token

    def rotate(self, name: str) -> str:
        """A new token for `name` (the old one stops working at once); un-revokes them too."""
        token = new_token()
        self._update(name, "token_hash = ?, revoked = 0", token_hash(token))
        return token

    def revoke(self, name: str) -> None:
        """`name`'s token stops working at their next request; their calls stay in the ledger."""
        self._update(name, "revoked = 1")

    def _update(self, name: str, assignment: str, *values: object) -> None:
        with self._lock, self._db:
            changed = self._db.execute(f"UPDATE learners SET {assignment} WHERE name = ?", (*values, name))
        if changed.rowcount == 0:
            raise ValueError(f"no learner named {name!r} (`agentlab gateway learner list` lists them)")

    def learners(self) -> list[Learner]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_LEARNER} FROM learners ORDER BY name").fetchall()
        return [_learner(row) for row in rows]

    def find(self, token: str) -> Learner | None:
        """The learner holding `token` (revoked or not), or None for a token nobody holds."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_LEARNER} FROM learners WHERE token_hash = ?", (token_hash(token),)
            ).fetchone()
        return _learner(row) if row else None

    # --- calls ------------------------------------------------------------------------------

    def record(self, call: Call, at: float | None = None, exchange: Exchange | None = None) -> None:
        """Commit one call, with its exchange if it has one, in one transaction (durably: the reply
        goes out after this returns)."""
        at = time.time() if at is None else at
        u = call.usage
        row = (
            call.learner_id,
            at,
            utc_day(at),
            call.model,
            call.outcome,
            call.status,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens + u.cache_write_1h_tokens,
            call.dollars,
            call.note[:300],
        )
        with self._lock, self._db:
            added = self._db.execute(
                "INSERT INTO calls (learner_id, at, day, model, outcome, status, input_tokens, "
                "output_tokens, cache_read_tokens, cache_write_tokens, dollars, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            if exchange is not None:
                self._db.execute(
                    "INSERT INTO exchanges (call_id, learner_id, key, request, message, latency, cut) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (added.lastrowid, call.learner_id, *vars(exchange).values()),
                )

    def exchanges(self, name: str, since: float | None = None, until: float | None = None) -> list[Exchange]:
        """Learner `name`'s recorded exchanges, oldest first (only those answered from `since` to
        `until`, Unix times, when given). ValueError for a name nobody has."""
        query = (
            "SELECT e.key, e.request, e.message, e.latency, e.cut FROM exchanges e "
            "JOIN calls c ON c.id = e.call_id WHERE e.learner_id = ? AND c.at >= ? AND c.at <= ? "
            "ORDER BY e.call_id"
        )
        with self._lock:
            found = self._db.execute("SELECT id FROM learners WHERE name = ?", (name,)).fetchone()
            if found is None:
                raise ValueError(f"no learner named {name!r} (`agentlab gateway learner list` lists them)")
            window = (-math.inf if since is None else since, math.inf if until is None else until)
            rows = self._db.execute(query, (*found, *window)).fetchall()
        return [Exchange(*row) for row in rows]

    # --- the class's budget -----------------------------------------------------------------

    def set_class_budget(self, dollars_per_day: float | None) -> None:
        """The class's dollars per UTC day, all learners together (None: no class limit)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO settings (name, value) VALUES ('class_dollars_per_day', ?) "
                "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (dollars_per_day,),
            )

    def class_budget(self) -> float | None:
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM settings WHERE name = 'class_dollars_per_day'"
            ).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def spent_by_class(self, day: str) -> float:
        """Dollars the whole class spent on UTC day `day`."""
        with self._lock:
            (dollars,) = self._db.execute(
                "SELECT COALESCE(SUM(dollars), 0) FROM calls WHERE day = ?", (day,)
            ).fetchone()
        return float(dollars)

    def spent(self, learner_id: int, day: str | None) -> float:
        """Dollars `learner_id` spent on UTC day `day`, or ever (`day=None`)."""
        query = "SELECT COALESCE(SUM(dollars), 0) FROM calls WHERE learner_id = ?"
        query, values = (query, (learner_id,)) if day is None else (f"{query} AND day = ?", (learner_id, day))
        with self._lock:
            (dollars,) = self._db.execute(query, values).fetchone()
        return float(dollars)

    def spent_by_learner(self, day: str) -> dict[str, float]:
        """Dollars each learner spent on UTC day `day` (learners who spent nothing: absent)."""
        query = (
            "SELECT l.name, SUM(c.dollars) FROM calls c JOIN learners l ON l.id = c.learner_id "
            "WHERE c.day = ? GROUP BY l.name"
        )
        with self._lock:
            return {name: float(dollars) for name, dollars in self._db.execute(query, (day,)).fetchall()}

    def report(self, day: str | None = None) -> list[dict[str, object]]:
        """Per learner and model: calls answered, tokens (fresh and cached), dollars, refusals,
        upstream failures, the last time seen (UTC, ISO 8601), dollars on UTC `day` (default
        today) and the learner's daily budget ("none": no limit); then one row for the whole
        class (learner "(class)", model "(all)"): the sums, against the class's daily budget."""
        day = day or utc_day(time.time())
        query = """
            SELECT l.name, c.model,
                   SUM(c.outcome = 'ok'), SUM(c.input_tokens), SUM(c.output_tokens),
                   SUM(c.cache_read_tokens), SUM(c.cache_write_tokens), SUM(c.dollars),
                   SUM(c.outcome = 'refused'), SUM(c.outcome = 'failed'), MAX(c.at),
                   SUM(CASE WHEN c.day = ? THEN c.dollars ELSE 0 END), l.dollars_per_day
            FROM calls c JOIN learners l ON l.id = c.learner_id
            GROUP BY l.name, c.model ORDER BY l.name, c.model"""
        with self._lock:
            rows = self._db.execute(query, (day,)).fetchall()
        limit = self.class_budget()
        out = []
        for row in rows:
            seen = datetime.fromtimestamp(row[10], timezone.utc).isoformat(timespec="seconds")
            budget = "none" if row[12] is None else row[12]
            values = (*row[:7], round(row[7], 10), *row[8:10], seen, round(row[11], 10), budget)
            out.append(dict(zip(REPORT_FIELDS, values, strict=True)))
        sums = {name: sum(r[name] for r in out) for name in REPORT_FIELDS[2:10] + ("dollars_today",)}
        last = max((str(r["last_seen"]) for r in out), default="")
        whole = {"learner": CLASS_ROW, "model": "(all)", **sums, "last_seen": last}
        return [*out, {**whole, "budget_per_day": "none" if limit is None else limit}]


_LEARNER = "id, name, dollars_per_day, max_tokens, models, revoked, per_minute, concurrent, dollars_total"


def _learner(row: tuple) -> Learner:
    ident, name, dollars, max_tokens, models, revoked, per_minute, concurrent, total = row
    allowed = tuple(m for m in models.split(",") if m)
    return Learner(ident, name, dollars, max_tokens, allowed, bool(revoked), per_minute, concurrent, total)
