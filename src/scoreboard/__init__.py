"""scoreboard: evaluate LLM-powered systems against cases, compare variants honestly, gate CI."""

__version__ = "0.1.0"

__all__ = ["__version__", "load_suite", "run", "run_async", "Case", "Output", "Result", "Grade",
           "GradeContext", "Measurements", "SubjectRequest", "ScoreboardError", "ConfigError",
           "SubjectError"]


def __getattr__(name: str):
    # Lazy re-exports keep `import scoreboard` (and `scoreboard --help`) fast.
    if name in ("Case", "Output", "Result", "Grade", "GradeContext", "Measurements", "SubjectRequest"):
        from .subjects import values as core

        return getattr(core, name)
    if name in ("ScoreboardError", "ConfigError", "SubjectError"):
        from . import errors

        return getattr(errors, name)
    if name == "load_suite":
        from .suite.load import load_suite

        return load_suite
    if name in ("run", "run_async"):
        from .engine import pipeline as evaluate

        return getattr(evaluate, name)
    raise AttributeError(name)
