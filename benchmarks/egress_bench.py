"""What the egress allowlist proxy (src/scoreboard/tasks/egress.py) costs an agent's traffic.

A loopback HTTP server on 127.0.0.2 stands for a model provider. Measured from this process:

- requests: N sequential small POSTs (1 KiB body, 1 KiB answer, a new connection each, as a
  proxied client makes them), direct vs through the proxy as an absolute-form request vs
  through a CONNECT tunnel; the mean per request and the added latency;
- stream: one large answer (MiB) read through a CONNECT tunnel vs direct, in MB/s.

Nothing leaves loopback. Run: `.venv/bin/python benchmarks/egress_bench.py [--requests 500] [--mib 200]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from scoreboard.tasks.egress import EgressProxy

BODY = b"x" * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(BODY)

    def do_GET(self):
        size = int(self.path.rsplit("/", 1)[-1])
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = b"y" * (1 << 20)
        left = size
        while left:
            n = min(left, len(chunk))
            self.wfile.write(chunk[:n])
            left -= n

    def log_message(self, *args):
        pass


async def _read_answer(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    got = 0
    while got < length:
        data = await reader.read(1 << 20)
        if not data:
            break
        got += len(data)
    return got


async def _one(mode: str, proxy_port: int, host: str, port: int, path: str, method: str = "POST") -> int:
    body = BODY if method == "POST" else b""
    target = f"{host}:{port}"
    if mode == "direct":
        reader, writer = await asyncio.open_connection(host, port)
        line = f"{method} {path} HTTP/1.1"
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
        if mode == "connect":
            writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            await reader.readuntil(b"\r\n\r\n")
            line = f"{method} {path} HTTP/1.1"
        else:
            line = f"{method} http://{target}{path} HTTP/1.1"
    writer.write(f"{line}\r\nHost: {target}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    got = await _read_answer(reader)
    writer.close()
    return got


async def main(requests: int, mib: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.2", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = "127.0.0.2", server.server_port
    proxy = EgressProxy({f"{host}:{port}": "model"})
    await proxy.start_tcp()
    print(f"{requests} sequential POSTs (1 KiB each way, a new connection each):")
    means = {}
    for mode in ("direct", "absolute-form", "connect"):
        for _ in range(20):  # warm-up
            await _one(mode, proxy.port, host, port, "/v1/messages")
        times = []
        for _ in range(requests):
            start = time.perf_counter()
            await _one(mode, proxy.port, host, port, "/v1/messages")
            times.append(time.perf_counter() - start)
        means[mode] = statistics.mean(times) * 1000
        print(f"  {mode:14s} mean {means[mode]:.3f} ms  median {statistics.median(times) * 1000:.3f} ms")
    for mode in ("absolute-form", "connect"):
        print(f"  added by the proxy ({mode}): {means[mode] - means['direct']:.3f} ms per request")
    size = mib << 20
    print(f"one {mib} MiB answer:")
    for mode in ("direct", "connect"):
        start = time.perf_counter()
        got = await _one(mode, proxy.port, host, port, f"/{size}", method="GET")
        took = time.perf_counter() - start
        print(f"  {mode:14s} {got / took / 1e6:.0f} MB/s")
    record = proxy.record()
    print(f"recorded tries: {len(record['tries'])} kept, {record['unrecorded']} counted only")
    await proxy.close()
    server.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.mib))
