"""What a Ray driver tells the cluster about itself, without a credential. `ray.init` records
the driver's whole command line (`psutil.Process().cmdline()`) as its job's entrypoint in the
cluster's job table, which `ray list jobs`, the dashboard and every worker can read: a
`--store postgresql://user:PASSWORD@host/db` (or any other credential the run knows) would be
kept there. The entrypoint is the command line with every known credential masked."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..redact import scrub_known

#: the logger of Ray's "Token authentication is enabled for this Ray cluster" warning
AUTH_SETUP_LOGGER = "ray._private.authentication.authentication_token_setup"


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


def init_ray(ray: Any, address: str | None, object_store_bytes: int) -> None:
    """Connect to the cluster at `address`, or start a local instance on 127.0.0.1 (None), quietly,
    its job's entrypoint holding no credential."""
    with masked_entrypoint(ray):
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
