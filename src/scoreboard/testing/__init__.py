"""Running suites from pytest: `suite("evals/suite.yaml")` in a test module collects one test per
case and one for the suite's gates (the plugin in plugin.py, registered as the `scoreboard`
pytest11 entry point, does the collecting)."""

from .handle import SuiteHandle, suite

__all__ = ["SuiteHandle", "suite"]
