"""The command line: one module per command, shared flag helpers; `console` is the console script (`main` for in-process callers)."""

from .main import console, main

__all__ = ["console", "main"]
