"""The local executor against the Ray executor: N attempts of an `openai` subject against the
loopback fake provider (tests/servers/fake_provider.py) answering after LATENCY ms, at
concurrency C, with the attempt log and the JSON report. Ray runs on a two-node cluster on this
machine (a head and a second node, one CPU each, started here and stopped after).

Prints, per executor, the wall time and the CPU time of every process that took part (the
scoreboard driver, and for Ray its raylets, GCS and worker processes, sampled until they end),
then per attempt.

    .venv/bin/python benchmarks/ray_bench.py                    # 10,000 attempts at 50 ms, c=200
    .venv/bin/python benchmarks/ray_bench.py --cases 2000 --latency-ms 50
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAY = Path(sys.executable).with_name("ray")
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_of(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


class CpuSampler:
    """The CPU seconds of every process whose command line matches, sampled until it ends (the
    most seen per pid), so processes that exit before the end still count."""

    def __init__(self, match: tuple[str, ...]):
        self.match, self.seen, self.stop = match, {}, threading.Event()
        self.names: dict[int, str] = {}
        self.base = {pid: cpu for pid, cpu in self._scan().items()}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _scan(self) -> dict[int, float]:
        out = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if any(m in cmd for m in self.match):
                cpu = cpu_of(int(entry.name))
                if cpu is not None:
                    out[int(entry.name)] = cpu
                    self.names.setdefault(int(entry.name), cmd.split()[0].rsplit("/", 1)[-1][:40])
        return out

    def _run(self) -> None:
        while not self.stop.is_set():
            for pid, cpu in self._scan().items():
                self.seen[pid] = max(self.seen.get(pid, 0.0), cpu)
            self.stop.wait(0.2)

    def total(self) -> float:
        self.stop.set()
        self.thread.join()
        return sum(cpu - self.base.get(pid, 0.0) for pid, cpu in self.seen.items())

    def by_name(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, cpu in self.seen.items():
            name = self.names.get(pid, "?")
            out[name] = out.get(name, 0.0) + cpu - self.base.get(pid, 0.0)
        return out


def run_one(folder: Path, executor: list[str], env: dict) -> tuple[float, float, dict]:
    sampler = CpuSampler(("ray::", "raylet", "gcs_server", "default_worker", "ray/_private")) if executor else None
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress", *executor],
                            cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0
    err = proc.stderr.read()
    cpu = usage.ru_utime + usage.ru_stime + (sampler.total() if sampler else 0.0)
    if sampler is not None and os.environ.get("RAY_BENCH_DETAIL"):
        parts = {"driver": usage.ru_utime + usage.ru_stime, **sampler.by_name()}
        print("CPU s by process:", {k: round(v, 1) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])})
    (report,) = (folder / "out" / "b").glob("*.json")
    data = json.loads(report.read_text())
    if data["run"]["status"] != "completed":
        raise SystemExit(f"run did not complete: {err[-2000:]}")
    return wall, cpu, data["summary"]["variants"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--concurrency", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32), "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}",
           "BENCH_KEY": "sk-bench-0000000000"}
    server = subprocess.Popen([sys.executable, "-m", "tests.servers.fake_provider", "--port", "0", "--latency-ms",
                               str(args.latency_ms)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])
    ray_port = free_port()
    short = Path(f"/tmp/raybench-{os.getpid()}")
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    try:
        subprocess.run([str(RAY), "start", "--head", "--port", str(ray_port), "--include-dashboard", "false",
                        "--temp-dir", str(short), *common], env=env, check=True, capture_output=True)
        subprocess.run([str(RAY), "start", "--address", f"127.0.0.1:{ray_port}", *common], env=env, check=True,
                       capture_output=True)
        rows = []
        for name, executor in (("local", []),
                               ("ray, 2 nodes", ["--executor", "ray", "--ray-address", f"127.0.0.1:{ray_port}"])):
            folder = work / name.split(",")[0]
            folder.mkdir()
            with open(folder / "cases.jsonl", "w") as out:
                for i in range(args.cases):
                    out.write(json.dumps({"id": f"c{i:06d}", "input": f"q{i}", "expected": f"q{i}",
                                          "grader": "contains"}) + "\n")
            subject = {"type": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": "m",
                       "api_key_env": "BENCH_KEY"}
            (folder / "suite.json").write_text(json.dumps({"name": "b", "cases": "cases.jsonl", "output_dir": "out",
                                                           "formats": ["json"], "subject": subject,
                                                           "concurrency": args.concurrency}))
            wall, cpu, variants = run_one(folder, executor, env)
            rows.append((name, wall, cpu, variants["m"]["passed"]))
        load = os.getloadavg()[0]
        print(f"{args.cases:,} attempts at {args.latency_ms:g} ms, concurrency {args.concurrency}; "
              f"load average {load:.1f} on {os.cpu_count()} cores")
        print("| executor | wall s | CPU s | CPU ms per attempt | wall vs local |")
        print("|---|---|---|---|---|")
        for name, wall, cpu, passed in rows:
            assert passed == args.cases, (name, passed)
            print(f"| {name} | {wall:.1f} | {cpu:.1f} | {cpu / args.cases * 1000:.2f} | {wall / rows[0][1]:.2f}x |")
    finally:
        subprocess.run([str(RAY), "stop", "--force"], env=env, capture_output=True)
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
