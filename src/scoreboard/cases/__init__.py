"""Case sources: JSONL files, JSON/YAML documents (and, later, other sources)."""

from .loader import load_case_records, load_cases

__all__ = ["load_case_records", "load_cases"]
