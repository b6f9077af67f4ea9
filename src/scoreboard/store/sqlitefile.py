"""Opening a SQLite store file: by its absolute path as a URI (SQLite itself reads a name
beginning 'file:' as a URI and ':memory:' as no file at all), with a LOWER that folds every
letter as Python does (SQLite's own folds only A-Z). Searches no longer call it: since schema 7
they match columns casefolded in Python, the same on SQLite and PostgreSQL; it stays for SQL
written against older stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote


def file_uri(path: Path) -> str:
    """The file a path names, as a SQLite URI: `--store file:h.sqlite` wrote h.sqlite (with the
    default mode, not owner-only) and `--store :memory:` kept nothing, when named as given."""
    return "file:" + quote(str(path.absolute()))


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def connect(uri: str, **options: Any) -> sqlite3.Connection:
    """A connection to a file URI, its LOWER folding every letter as Python's str.lower."""
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, **options)
    conn.create_function("lower", 1, _lower, deterministic=True)
    return conn
