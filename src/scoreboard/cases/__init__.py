"""Case sources: JSONL files, JSON/YAML documents (and, later, other sources)."""

from .formats import load_case_records
from .loader import load_cases

__all__ = ["load_case_records", "load_cases"]
