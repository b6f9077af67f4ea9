"""The executors by name: `--executor NAME` and `RunOptions(executor=NAME)` pick one here.
Registering another is one line (`EXECUTORS["mine"] = MyExecutor`)."""

from __future__ import annotations

from typing import Any, Callable

from .executor import Executor, LocalExecutor


def _ray(**settings: Any) -> Executor:
    from .ray_executor import RayExecutor

    return RayExecutor(**settings)


EXECUTORS: dict[str, Callable[..., Executor]] = {"local": LocalExecutor, "ray": _ray}


def get_executor(name: str | None, settings: dict | None = None) -> Executor:
    """The executor registered under `name` (default local), made with its settings."""
    from ..errors import ConfigError

    factory = EXECUTORS.get(name or "local")
    if factory is None:
        raise ConfigError(f"unknown executor {name!r} (known: {', '.join(EXECUTORS)})", field="executor")
    if settings and factory is LocalExecutor:
        raise ConfigError(f"the local executor takes no settings (got {', '.join(sorted(settings))})",
                          field="executor")
    return factory(**(settings or {}))
