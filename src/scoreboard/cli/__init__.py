"""The command line: one module per command, shared flag helpers; `main` is the console script."""

from .main import main

__all__ = ["main"]
