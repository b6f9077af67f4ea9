"""Time `scoreboard import promptfoo` on a config with 10,000 tests (half inline in the YAML,
half from a CSV with promptfoo's __expected columns), each with several assertions.

    PYTHONPATH=src python benchmarks/import_bench.py [--tests 10000]
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from scoreboard.importers.promptfoo import import_promptfoo


def make_config(folder: Path, n: int) -> Path:
    inline = [{"description": f"inline {i}", "vars": {"city": f"City {i}", "n": i},
               "assert": [{"type": "icontains", "value": "{{ city }}"}, {"type": "regex", "value": r"^\d+$"},
                          {"type": "javascript", "value": "output.length < 500"},
                          {"type": "equals", "value": i}]} for i in range(n // 2)]
    with open(folder / "tests.csv", "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["city", "__expected1", "__expected2", "__description"])
        for i in range(n - n // 2):
            w.writerow([f"Town {i}", f"contains-any:Town {i},town", "not-icontains:error", f"csv {i}"])
    config = {"description": "bench", "prompts": ["Where is {{ city }}?"],
              "providers": [{"id": "openai:chat:m", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1"}}],
              "defaultTest": {"assert": [{"type": "not-contains", "value": "As an AI"}]},
              "tests": inline + ["file://tests.csv"]}
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=10_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="import-bench-"))
    try:
        config = make_config(folder, args.tests)
        size = config.stat().st_size + (folder / "tests.csv").stat().st_size
        start = time.perf_counter()
        _out, report = import_promptfoo(str(config), str(folder / "out"))
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{report.counts['cases']} cases, {report.counts['graders']} graders from {size / 1e6:.1f} MB of "
              f"config and CSV: {seconds:.2f} s ({report.counts['cases'] / seconds:,.0f} tests/s), "
              f"peak RSS {peak:.0f} MiB, {len(report.left_out)} items not converted")
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
