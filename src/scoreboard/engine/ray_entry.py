"""What a Ray driver tells the cluster about itself, without a credential. `ray.init` records
the driver's whole command line (`psutil.Process().cmdline()`) as its job's entrypoint in the
cluster's job table, which `ray list jobs`, the dashboard and every worker can read: a
`--store postgresql://user:PASSWORD@host/db` (or any other credential the run knows) would be
kept there. The entrypoint is the command line with every known credential masked."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigError
from ..redact import scrub_known

INSTALL_HINT = "the ray executor needs Ray: pip install 'scoreboard[ray]'"
#: the logger of Ray's "Token authentication is enabled for this Ray cluster" warning
AUTH_SETUP_LOGGER = "ray._private.authentication.authentication_token_setup"


def import_ray():
    """The ray module, or the one-line install hint."""
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT, field="executor") from None
    return ray


@contextmanager
def masked_entrypoint(ray: Any) -> Iterator[None]:
    """While a `ray.init` runs: Ray's entrypoint name with every known credential masked."""
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    original = getattr(utils, "get_entrypoint_name", None)
    if original is None:  # another Ray: nothing of ours to mask
        yield
        return

    def masked() -> str:
        return scrub_known(original())

    utils.get_entrypoint_name = masked
    try:
        yield
    finally:
        utils.get_entrypoint_name = original


@contextmanager
def kept_sigterm() -> Iterator[None]:
    """The run's own SIGTERM handling kept through `ray.init`. It installs a handler that exits
    (sys.exit(15)) in the driver, and Ray's core worker a failure-signal handler that logs a stack
    and re-raises: a SIGTERM killed a Ray run outright (exit 15, or an abort), never the graceful
    stop a local run makes (no new attempts, the grace, a report, in-flight attempts
    interrupted). The handler in place before (the run's) is put back after."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)


def init_ray(ray: Any, address: str | None, object_store_bytes: int) -> None:
    """Connect to the cluster at `address`, or start a local instance on 127.0.0.1 (None), quietly,
    its job's entrypoint holding no credential, the run's SIGTERM handling kept."""
    with masked_entrypoint(ray), kept_sigterm():
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     logging_level="ERROR", configure_logging=False)
        else:
            # Ray turns token authentication on for an instance it starts and warns so on the
            # run's stderr, telling the user how to opt out of a cluster they never started: the
            # mode stays Ray's, the warning is not printed.
            quiet = logging.getLogger(AUTH_SETUP_LOGGER)
            level = quiet.level
            quiet.setLevel(logging.ERROR)
            try:
                ray.init(address="local", include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                         configure_logging=False, _node_ip_address="127.0.0.1",
                         object_store_memory=object_store_bytes)
            finally:
                quiet.setLevel(level)
