"""What knowing whether a try was sent costs a request (subjects/_unsent.py).

A try that failed before any byte of it was written is recorded as never sent (no usage, no
budget). The first way of knowing it was an aiohttp trace config (`on_request_headers_sent`);
the build now marks the try's probe from the connector (`ProbingConnector`, the probe carried in
a context variable). This measures the client's CPU per request for the three: a plain aiohttp
session, the connector's probe, and the trace config, against tests/servers/fake_provider.py on
loopback (0 ms latency), 3,000 POSTs at 50 at once per round, the modes alternating for
`--rounds` rounds (medians; CPU time, so other load on the machine matters less than for wall).

    .venv/bin/python benchmarks/sent_probe_bench.py [--rounds 7] [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from scoreboard.subjects._unsent import ProbingConnector, SentProbe, probing

ROOT = Path(__file__).resolve().parents[1]
MODES = ("plain", "probed", "traced")


async def _headers_sent(session, ctx, params) -> None:
    if isinstance(ctx.trace_request_ctx, SentProbe):
        ctx.trace_request_ctx.sent = True


def _trace_config() -> aiohttp.TraceConfig:
    config = aiohttp.TraceConfig()
    config.on_request_headers_sent.append(_headers_sent)
    return config


async def _round(url: str, mode: str, n: int, at_once: int = 50) -> float:
    """CPU seconds of n requests in one mode."""
    connector = (ProbingConnector if mode == "probed" else aiohttp.TCPConnector)(limit=at_once)
    extra = {"trace_configs": [_trace_config()]} if mode == "traced" else {}
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    async with aiohttp.ClientSession(connector=connector, **extra) as session:
        gate = asyncio.Semaphore(at_once)

        async def one() -> None:
            async with gate:
                probe = SentProbe()
                if mode == "probed":
                    probing(probe)
                kwargs = {"trace_request_ctx": probe} if mode == "traced" else {}
                async with session.post(url, data=body, headers={"Content-Type": "application/json"},
                                        **kwargs) as resp:
                    await resp.read()
                if mode != "plain" and not probe.sent:
                    raise AssertionError(f"{mode}: the probe was not set for a request that was sent")

        started = time.process_time()
        await asyncio.gather(*(one() for _ in range(n)))
        return time.process_time() - started


async def _measure(url: str, rounds: int, n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {m: [] for m in MODES}
    await _round(url, "plain", 200)  # warm: imports, the server's first connections
    for _ in range(rounds):
        for mode in MODES:
            out[mode].append(await _round(url, mode, n))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    server = subprocess.Popen([sys.executable, "-m", "tests.servers.fake_provider", "--port", "0",
                               "--latency-ms", "0"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        results = asyncio.run(_measure(url, args.rounds, args.requests))
    finally:
        server.terminate()
        server.wait()
    print(f"| mode | CPU us per request, median of {args.rounds} (min-max) |")
    print("|---|---|")
    for mode in MODES:
        values = [v / args.requests * 1e6 for v in results[mode]]
        print(f"| {mode} | {statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
