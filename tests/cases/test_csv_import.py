"""`scoreboard import csv`: a spreadsheet of corrections -> a JSONL case file."""

from __future__ import annotations

import argparse
import json
import os
import stat

import pytest

from scoreboard.cases import load_cases
from scoreboard.cases.csv_import import build_records, import_csv, parse_map
from scoreboard.errors import ConfigError
from scoreboard.cli import import_csv as command
from tests.cli_inprocess import run_cli


def _wired() -> bool:
    proc = run_cli(["import", "csv", "--help"], os.getcwd())
    return proc.returncode == 0


WIRED = _wired()


def run_import(argv: list[str], cwd=None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `scoreboard import csv ARGV`: end to end when the
    sub-command is wired into the CLI, else through this module's add_arguments + main."""
    if WIRED:
        proc = run_cli(["import", "csv", *argv], os.getcwd() if cwd is None else cwd)
        return proc.returncode, proc.stdout, proc.stderr
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args(argv)
    import contextlib
    import io

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = command.main(args)
    except ConfigError as exc:
        return exc.exit_code, out.getvalue(), f"scoreboard: error: {exc}\n"
    return code, out.getvalue(), ""


def write_csv(path, text: str, *, bom: bool = False, crlf: bool = False):
    if crlf:
        text = text.replace("\n", "\r\n")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


QUIRKY = (
    'case_id,doc_text,corrected_json,kind\n'
    'inv-1,"2 bags, at EUR 10 each","{""total"": 20, ""currency"": ""EUR""}",invoice\n'
    'inv-2,"He said ""pay now""\nsecond line","{""total"": 5, ""currency"": ""EUR""}",\n'
    '\n'
    'inv-3,plain,"{""total"": 1, ""currency"": ""USD"", ""note"": ""a,b""}",delivery_note\n'
)


@pytest.mark.parametrize("bom, crlf", [(False, False), (True, False), (False, True), (True, True)])
def test_quirks_quoted_commas_doubled_quotes_multiline_bom_crlf(tmp_path, bom, crlf):
    src = write_csv(tmp_path / "corrections.csv", QUIRKY, bom=bom, crlf=crlf)
    out = tmp_path / "cases.jsonl"
    code, stdout, stderr = run_import(["--csv", str(src), "--map", "input=doc_text,expected=corrected_json,id=case_id",
                                       "--category-column", "kind", "--out", str(out)])
    assert code == 0, stderr
    assert stdout.strip() == f"wrote 3 cases to {out}"
    records = read_jsonl(out)
    newline = "\r\n" if crlf else "\n"
    assert records[0] == {"id": "inv-1", "input": "2 bags, at EUR 10 each",
                          "expected": {"total": 20, "currency": "EUR"}, "grader": "json-fields",
                          "fields": ["total", "currency"], "category": "invoice",
                          "metadata": {"csv_row": 2}}
    assert records[1]["input"] == f'He said "pay now"{newline}second line'
    assert "category" not in records[1]
    assert records[2]["expected"]["note"] == "a,b" and records[2]["metadata"] == {"csv_row": 5}
    assert records[2]["fields"] == ["total", "currency", "note"]
    # every line is a valid case for the loader
    cases = load_cases(out)
    assert [c.id for c in cases] == ["inv-1", "inv-2", "inv-3"]
    assert cases[0].graders == [{"json-fields": {"fields": ["total", "currency"]}}]
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_header_bom_does_not_hide_the_first_column(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'id,in,exp\na,x,"{""k"": 1}"\n', bom=True)
    out = tmp_path / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=in,expected=exp,id=id", "--out", str(out)])
    assert code == 0, stderr
    assert read_jsonl(out)[0]["id"] == "a"


def test_fields_flag_and_default_ids(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'text,json\n'
                                        'a,"{""document_type"": ""invoice"", ""vat_rate"": 19, ""x"": 1}"\n'
                                        'b,"{""document_type"": ""note"", ""vat_rate"": 7}"\n')
    out = tmp_path / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=text,expected=json",
                                  "--fields", "document_type,vat_rate", "--out", str(out)])
    assert code == 0, stderr
    records = read_jsonl(out)
    assert [r["id"] for r in records] == ["row-2", "row-3"]
    assert all(r["fields"] == ["document_type", "vat_rate"] for r in records)
    assert load_cases(out)[1].graders == [{"json-fields": {"fields": ["document_type", "vat_rate"]}}]


def test_fields_missing_from_a_row_names_the_row(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'text,json\na,"{""a"": 1, ""b"": 2}"\nb,"{""a"": 1}"\n')
    out = tmp_path / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=text,expected=json",
                                  "--fields", "a,b", "--out", str(out)])
    assert code == 1
    assert "row 3" in stderr and "'json'" in stderr and "'b'" in stderr
    assert not out.exists()


def test_bad_json_names_row_and_column_and_writes_nothing(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'id,text,json\n'
                                        'a,x,"{""k"": 1}"\n'
                                        'b,"multi\nline",{not json}\n')
    out = tmp_path / "o.jsonl"
    code, stdout, stderr = run_import(["--csv", str(src), "--map", "input=text,expected=json,id=id",
                                       "--out", str(out)])
    assert code == 1 and stdout == ""
    # the multiline cell keeps the bad row at spreadsheet row 3 (file line 4)
    assert "row 3, column 'json'" in stderr and "not valid JSON" in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_json_fields_needs_an_object(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'text,json\na,"[1, 2]"\n')
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=text,expected=json",
                                  "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "row 2, column 'json'" in stderr and "JSON object" in stderr


def test_exact_keeps_expected_text_literally(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nWhat is 6x7?," 42 "\nJSON-ish,"{""k"": 1}"\n')
    out = tmp_path / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--grader", "exact",
                                  "--out", str(out)])
    assert code == 0, stderr
    records = read_jsonl(out)
    assert records[0]["expected"] == " 42 " and records[0]["grader"] == "exact"
    assert records[1]["expected"] == '{"k": 1}'
    assert "fields" not in records[0]
    assert load_cases(out)[1].expected == '{"k": 1}'


def test_other_graders_need_json(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nx,"[""Paris""]"\ny,Paris\n')
    out = tmp_path / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--grader", "contains",
                                  "--out", str(out)])
    assert code == 1 and "row 3, column 'a'" in stderr and "needs JSON" in stderr
    assert not out.exists()
    src2 = write_csv(tmp_path / "d.csv", 'q,a\nx,"[""Paris""]"\n')
    code, _, stderr = run_import(["--csv", str(src2), "--map", "input=q,expected=a",
                                  "--grader", '{"contains": {"mode": "any"}}', "--out", str(out)])
    assert code == 0, stderr
    assert read_jsonl(out)[0]["grader"] == {"contains": {"mode": "any"}}
    assert load_cases(out)[0].expected == ["Paris"]


def test_grader_check_case_runs_per_row(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nx,"{""k"": 1}"\n')
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--grader", "contains",
                                  "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "row 2, column 'a'" in stderr


def test_unknown_column_lists_the_header(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'doc_text,corrected_json\nx,"{}"\n')
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=doc_txt,expected=corrected_json",
                                  "--out", str(tmp_path / "o.jsonl")])
    assert code == 1
    assert "'doc_txt'" in stderr and "'doc_text', 'corrected_json'" in stderr
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=doc_text,expected=corrected_json",
                                  "--category-column", "kind", "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "'kind'" in stderr


@pytest.mark.parametrize("spec, message", [
    ("input=a", "expected"),
    ("expected=b", "input"),
    ("input=a,expected=b,idd=c", "unknown"),
    ("input=a,expected", "KEY=COLUMN"),
    ("input=a,input=b,expected=c", "twice"),
])
def test_map_must_name_input_and_expected(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_map(spec)


def test_map_may_be_repeated():
    assert parse_map(["input=a", "expected=b,id=c"]) == {"input": "a", "expected": "b", "id": "c"}


@pytest.mark.parametrize("body, message", [
    ('id,q,a\n,x,"{""k"": 1}"\n', "row 2, column 'id': empty case id"),
    ('id,q,a\nA,x,"{""k"": 1}"\nB,y,"{""k"": 1}"\nA,z,"{""k"": 2}"\n', "row 4, column 'id': duplicate case id 'A' (first on row 2)"),
    ('id,q,a\nA,,"{""k"": 1}"\n', "row 2, column 'q': empty input"),
    ('id,q,a\nA,x,"{""k"": 1}",extra\n', "row 2 has 4 cells"),
    ('id,q,a\nA,x\n', "row 2, column 'a': missing"),
    ('id,q,a\nA,"x,"{""k"": 1}"\n', "malformed CSV"),
    ('id,q,a\nA,x,"{}"\n', "non-empty mapping"),
    ('', "no header"),
    ('id,q,a\n\n', "no data rows"),
])
def test_row_errors(tmp_path, body, message):
    src = write_csv(tmp_path / "c.csv", body)
    with pytest.raises(ConfigError) as err:
        build_records(src, tmp_path / "o.jsonl", {"input": "q", "expected": "a", "id": "id"})
    assert message in str(err.value)
    assert str(src) in str(err.value)


def test_refuses_to_overwrite(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nx,"{""k"": 1}"\n')
    out = tmp_path / "o.jsonl"
    out.write_text("keep me\n", encoding="utf-8")
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--out", str(out)])
    assert code == 1 and "refusing to overwrite" in stderr
    assert out.read_text(encoding="utf-8") == "keep me\n"


def test_at_file_inputs_are_rewritten_relative_to_the_output(tmp_path):
    data = tmp_path / "sheets"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "inv1.txt").write_text("invoice one", encoding="utf-8")
    (data / "docs" / "inv2.txt").write_text("invoice two", encoding="utf-8")
    src = write_csv(data / "c.csv", 'q,a\n@docs/inv1.txt,"{""k"": 1}"\n@docs/inv2.txt,"{""k"": 2}"\n')
    out = tmp_path / "cases" / "nested" / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--out", str(out)])
    assert code == 0, stderr
    records = read_jsonl(out)
    assert records[0]["input"] == "@../../sheets/docs/inv1.txt"
    assert records[1]["input"] == "@../../sheets/docs/inv2.txt"
    # The written paths climb out of the case file's folder: they load under a root holding both.
    cases = load_cases(out, root=tmp_path)
    assert cases[0].input == "invoice one" and cases[1].input == "invoice two"
    with pytest.raises(ConfigError, match="climbs out"):
        load_cases(out)


def test_absolute_and_escaping_at_file_inputs_are_refused(tmp_path):
    """A sheet's `@` paths follow the case-file rule: relative, inside the sheet's folder."""
    data = tmp_path / "sheets"
    data.mkdir()
    (tmp_path / "elsewhere").mkdir()
    absolute = tmp_path / "elsewhere" / "abs.txt"
    absolute.write_text("absolute doc", encoding="utf-8")
    for cell, words in ((f"@{absolute}", "absolute path"), ("@../elsewhere/abs.txt", "climbs out")):
        src = write_csv(data / "c.csv", f'q,a\n{cell},"{{""k"": 2}}"\n')
        out = tmp_path / "o.jsonl"
        code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--out", str(out)])
        assert code == 1 and words in stderr and "row 2, column 'q'" in stderr, stderr
        assert len(stderr.splitlines()) == 1 and not out.exists()


def test_at_file_relative_paths_with_relative_arguments(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "doc.txt").write_text("text", encoding="utf-8")
    write_csv(tmp_path / "in" / "c.csv", 'q,a\n@doc.txt,"{""k"": 1}"\n')
    records = build_records(tmp_path / "in" / "c.csv", tmp_path / "o.jsonl", {"input": "q", "expected": "a"})
    assert records[0]["input"] == "@in/doc.txt"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = import_csv("in/c.csv", "out/o.jsonl", {"input": "q", "expected": "a"})
    finally:
        os.chdir(cwd)
    assert result.records[0]["input"] == "@../in/doc.txt"
    assert load_cases(tmp_path / "out" / "o.jsonl", root=tmp_path)[0].input == "text"


def test_missing_at_file_fails_early(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nok,"{""k"": 1}"\n@nope.txt,"{""k"": 1}"\n')
    out = tmp_path / "o.jsonl"
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--out", str(out)])
    assert code == 1 and "row 3, column 'q'" in stderr and "'nope.txt' not found" in stderr
    assert not out.exists()


def test_fields_only_with_default_grader(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nx,"{""k"": 1}"\n')
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--grader", "exact",
                                  "--fields", "k", "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "--fields" in stderr


def test_unknown_grader(tmp_path):
    src = write_csv(tmp_path / "c.csv", 'q,a\nx,"{""k"": 1}"\n')
    code, _, stderr = run_import(["--csv", str(src), "--map", "input=q,expected=a", "--grader", "exactly",
                                  "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "unknown grader 'exactly'" in stderr


def test_missing_csv_and_non_utf8(tmp_path):
    code, _, stderr = run_import(["--csv", str(tmp_path / "none.csv"), "--map", "input=q,expected=a",
                                  "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "not found" in stderr
    (tmp_path / "latin.csv").write_bytes("q,a\ncaf\xe9,\"{}\"\n".encode("latin-1"))
    code, _, stderr = run_import(["--csv", str(tmp_path / "latin.csv"), "--map", "input=q,expected=a",
                                  "--out", str(tmp_path / "o.jsonl")])
    assert code == 1 and "UTF-8" in stderr


def test_large_cells_are_read(tmp_path):
    big = "word " * 40_000  # over the csv module's default 128 KiB field limit
    src = write_csv(tmp_path / "c.csv", f'q,a\n"{big}","{{""k"": 1}}"\n')
    records = build_records(src, tmp_path / "o.jsonl", {"input": "q", "expected": "a"})
    assert records[0]["input"] == big
