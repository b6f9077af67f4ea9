"""A promptfoo derivedMetric may take the name of an assertion's metric (promptfoo then writes the
derived value over the named score); scoreboard refuses two figures of one name, so the importer
lists that derived metric as not converted instead of writing a suite that fails to load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

CONFIG = """prompts: ['Q: {{ q }}']
providers: [echo]
tests:
  - vars: {q: 'yes a'}
    assert:
      - {type: contains, value: 'yes', metric: accuracy}
  - vars: {q: 'b'}
defaultTest:
  assert:
    - {type: icontains, value: 'Q', metric: recall}
derivedMetrics:
  - {name: accuracy, value: 'accuracy * 0.5'}
  - {name: recall, value: 'recall / __count'}
  - {name: half, value: 'accuracy / 2'}
"""


def scoreboard(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_derived_metric_named_like_an_assertion_metric_is_listed_and_the_suite_loads(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text(CONFIG)
    done = scoreboard(tmp_path, "import", "promptfoo", "promptfooconfig.yaml", "--output", "out")
    assert done.returncode == 3 and "2 items were not converted" in done.stdout, done.stdout + done.stderr
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["derived_metrics"] == {"half": {"expression": "accuracy / 2", "aggregate": "sum"}}
    listed = (tmp_path / "out" / "conversion-report.md").read_text()
    for i, name in ((0, "accuracy"), (1, "recall")):
        line = next(x for x in listed.splitlines() if f"derivedMetrics.{i}" in x)
        assert f"'{name}'" in line and "assertion" in line, line
    done = scoreboard(tmp_path, "validate", "out/suite.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
