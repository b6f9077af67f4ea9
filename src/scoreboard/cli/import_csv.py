"""`scoreboard import csv`: turn a spreadsheet of corrections into a JSONL case file.

    scoreboard import csv --csv corrections.csv \\
        --map input=doc_text,expected=corrected_json,id=case_id \\
        --fields document_type,line_items,vat_rate --output imported-cases.jsonl

Errors are raised as ConfigError (exit 1, one line); the CLI prints them.
"""

from __future__ import annotations

import argparse

from ..words import plural


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `import csv`."""
    parser.add_argument("--csv", required=True, metavar="FILE",
                        help="CSV file with a header row (UTF-8, BOM allowed)")
    parser.add_argument("--map", required=True, action="append", metavar="KEY=COL,...",
                        help="columns for input and expected (required) and id (optional, default "
                             "row-N with N the spreadsheet row), e.g. input=doc_text,expected=fixed_json,id=case_id")
    parser.add_argument("--fields", action="append", metavar="A,B,...",
                        help="json-fields paths to compare (default: every top-level key of each expected object)")
    parser.add_argument("--grader", metavar="SPEC",
                        help="grader for every case: a name or JSON spec (default json-fields; "
                             "'exact' keeps the expected cell as literal text)")
    parser.add_argument("--category-column", metavar="COL", help="column holding each case's category")
    parser.add_argument("--output", "--out", dest="out", required=True, metavar="CASES.jsonl",
                        help="case file to create (never overwritten); @file inputs are rewritten relative "
                             "to it (--out is the older spelling)")


def main(args: argparse.Namespace) -> int:
    """Import the CSV; print 'wrote N cases to OUT'."""
    from ..cases.csv_import import import_csv, parse_fields, parse_map

    mapping = parse_map(args.map)
    fields = parse_fields(args.fields)
    result = import_csv(args.csv, args.out, mapping, fields=fields, grader=args.grader,
                        category_column=args.category_column)
    print(f"wrote {plural(len(result.records), 'case')} to {result.path}")
    return 0
