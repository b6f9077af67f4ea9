"""Stores: the SQLite response cache (history and team stores can join later)."""
