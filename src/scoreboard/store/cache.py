"""Response cache in SQLite, keyed by the hash of the complete request.

The key covers the subject's saved settings, the rendered input, the skill, the params and
the run index, so a change to any of them is a miss. A hit makes no request: it records
requests = 0, cost 0 and `cached: true`; the original usage is kept under `cached_from`.
Off by default (`--cache`).

Like every file a run writes, the database is owner-only (0600, its WAL and shared-memory files
take its mode) in a folder created 0700, and holds no credential the run knows: outputs are
scrubbed before they are stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from ..hashing import sha256_json
from ..record.files import make_private_dirs
from ..redact import KNOWN
from ..subjects.values import Measurements, Output, Result, SubjectRequest

MIGRATIONS = [
    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, subject TEXT NOT NULL, "
    "output TEXT NOT NULL, measurements TEXT NOT NULL, created_at REAL NOT NULL)",
]


class ResponseCache:
    """A small synchronous SQLite store; lookups are local and fast enough for the event loop."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        make_private_dirs(self.path.parent)
        # Made here, owner-only, before SQLite opens it: SQLite creates its journal files with
        # the database's mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        for number, statement in enumerate(MIGRATIONS[version:], start=version + 1):
            self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version={number}")
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(subject_spec: dict, request: SubjectRequest) -> str:
        key = {"subject": subject_spec, "input": request.input, "skill": request.skill,
               "params": request.params, "run": request.run}
        if request.seed is not None:  # keys of seedless requests stay what they were
            key["seed"] = request.seed
        return sha256_json(key)

    def get(self, key: str) -> Result | None:
        row = self.db.execute("SELECT output, measurements FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        original = json.loads(row[1])
        m = Measurements(input_tokens=original.get("input_tokens"), output_tokens=original.get("output_tokens"),
                         cost_usd=0.0, requests=0, cached=True)
        return Result(Output.from_dict(json.loads(row[0])), m, {"cached_from": original})

    def put(self, key: str, subject_kind: str, result: Result) -> None:
        value = result.output.to_dict()
        try:
            output = json.dumps(value, ensure_ascii=False)
            output.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: kept as its \u escape, read back the same
            output = json.dumps(value, ensure_ascii=True)
        if KNOWN:
            output = KNOWN.scrub(output)
        self.db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                        (key, subject_kind, output, json.dumps(result.measurements.to_dict()), time.time()))

    def close(self) -> None:
        self.db.close()
