"""Gold directories: documents beside NAME.gold.json references."""

from __future__ import annotations

import io
import json
import os

import pytest

from scoreboard.cases.gold import is_gold_dir, load_gold_dir
from scoreboard.errors import ConfigError
from scoreboard.suite.config import Limits

fpdf = pytest.importorskip("fpdf")
pypdf = pytest.importorskip("pypdf")


def make_pdf(pages: list[list[str]]) -> bytes:
    """A text PDF: one list of lines per page."""
    pdf = fpdf.FPDF()
    pdf.set_font("helvetica", size=12)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(text=line)
            pdf.ln()
    return bytes(pdf.output())


def encrypt(data: bytes, password: str = "pw") -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def gold(path, fields, **extra):
    path.write_text(json.dumps({**extra, "fields": fields}), encoding="utf-8")


def test_text_markdown_and_pdf_documents(tmp_path):
    (tmp_path / "b_note.txt").write_text("Total: 20 EUR\n", encoding="utf-8")
    gold(tmp_path / "b_note.gold.json", {"total": 20})
    (tmp_path / "a_memo.md").write_text("# Memo\n\nbody", encoding="utf-8")
    gold(tmp_path / "a_memo.gold.json", {"title": "Memo"}, doc_class="memo")
    (tmp_path / "c_msa.pdf").write_bytes(make_pdf([["Acme Corp and Customer Inc", "Governing law: Delaware"],
                                                   ["Page two"]]))
    gold(tmp_path / "c_msa.gold.json", {"governing_law": "Delaware"},
         document_id="doc_demo_a3b4", doc_class="master_service_agreement")
    assert is_gold_dir(tmp_path)
    cases, skipped = load_gold_dir(tmp_path)
    assert skipped == []
    assert [c.id for c in cases] == ["a_memo", "b_note", "doc_demo_a3b4"]
    memo, note, msa = cases
    assert memo.input == "# Memo\n\nbody" and memo.category == "memo"
    assert note.expected == {"total": 20} and note.category is None
    assert msa.input == "Acme Corp and Customer Inc\nGoverning law: Delaware\nPage two"
    assert msa.expected == {"governing_law": "Delaware"}
    assert msa.category == "master_service_agreement"
    assert msa.metadata == {"document": "c_msa.pdf", "gold": "c_msa.gold.json"}
    assert msa.source == str(tmp_path / "c_msa.gold.json")
    assert msa.input_error is None and msa.input_hash
    assert all(c.input_hash for c in cases)


def test_encrypted_and_corrupt_pdfs_become_input_errors(tmp_path):
    (tmp_path / "locked.pdf").write_bytes(encrypt(make_pdf([["secret"]])))
    gold(tmp_path / "locked.gold.json", {"a": 1})
    (tmp_path / "broken.pdf").write_bytes(os.urandom(600))
    gold(tmp_path / "broken.gold.json", {"a": 2})
    cases, _ = load_gold_dir(tmp_path)
    broken, locked = cases
    assert broken.id == "broken" and broken.input == ""
    assert broken.input_error.startswith("cannot read PDF broken.pdf: ")
    assert locked.input == ""
    assert locked.input_error.startswith("cannot read PDF locked.pdf: ")
    assert "encrypted" in locked.input_error
    assert locked.to_dict()["input_error"] == locked.input_error


def test_pdf_encrypted_with_empty_password_is_read(tmp_path):
    (tmp_path / "open.pdf").write_bytes(encrypt(make_pdf([["Readable text"]]), password=""))
    gold(tmp_path / "open.gold.json", {"a": 1})
    (case,), _ = load_gold_dir(tmp_path)
    assert case.input_error is None and case.input == "Readable text"


def test_document_without_gold_is_skipped_not_dropped(tmp_path):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    gold(tmp_path / "a.gold.json", {"k": 1})
    (tmp_path / "z_unlabelled.pdf").write_bytes(b"%PDF-1.4 whatever")
    (tmp_path / "m.md").write_text("y", encoding="utf-8")
    (tmp_path / "notes.csv").write_text("not a document", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("ignored: one level only", encoding="utf-8")
    gold(tmp_path / "sub" / "deep.gold.json", {"k": 2})
    cases, skipped = load_gold_dir(tmp_path)
    assert [c.id for c in cases] == ["a"]
    assert skipped == [{"document": "m.md", "reason": "no gold file"},
                       {"document": "z_unlabelled.pdf", "reason": "no gold file"}]


def test_gold_without_document_is_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    gold(tmp_path / "a.gold.json", {"k": 1})
    gold(tmp_path / "orphan.gold.json", {"k": 1})
    with pytest.raises(ConfigError) as err:
        load_gold_dir(tmp_path)
    assert "orphan.gold.json" in str(err.value) and "no document" in str(err.value)


def test_unknown_gold_key_names_file_line_and_field(tmp_path):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "a.gold.json").write_text('{\n  "fields": {"k": 1},\n  "doc_klass": "x"\n}', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_gold_dir(tmp_path)
    e = err.value
    assert e.file == str(tmp_path / "a.gold.json") and e.field == "doc_klass" and e.line == 3
    assert "unknown field" in str(e)


@pytest.mark.parametrize("text, message, line", [
    ('{"fields": {"k": 1},\n  "doc_class": }', "invalid JSON", 2),
    ('{"document_id": "x"}', "required field is missing", None),
    ('{"fields": [1, 2]}', "must be a mapping", 1),
    ('[1]', "expected a JSON object", 1),
    ('{"fields": {}, "document_id": "  "}', "nonempty", 1),
])
def test_invalid_gold_files(tmp_path, text, message, line):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "a.gold.json").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_gold_dir(tmp_path)
    assert message in str(err.value) and err.value.line == line
    assert err.value.file == str(tmp_path / "a.gold.json")


def test_duplicate_ids_name_both_files(tmp_path):
    for stem in ("a", "b"):
        (tmp_path / f"{stem}.txt").write_text(stem, encoding="utf-8")
        gold(tmp_path / f"{stem}.gold.json", {"k": 1}, document_id="same")
    with pytest.raises(ConfigError) as err:
        load_gold_dir(tmp_path)
    text = str(err.value)
    assert "a.gold.json" in text and "b.gold.json" in text and "duplicate" in text


def test_two_documents_for_one_gold_file(tmp_path):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "a.pdf").write_bytes(make_pdf([["x"]]))
    gold(tmp_path / "a.gold.json", {"k": 1})
    with pytest.raises(ConfigError, match="a.pdf and a.txt"):
        load_gold_dir(tmp_path)


def test_limits(tmp_path):
    for stem in ("a", "b"):
        (tmp_path / f"{stem}.txt").write_text(stem * 50, encoding="utf-8")
        gold(tmp_path / f"{stem}.gold.json", {"k": 1})
    with pytest.raises(ConfigError, match="max_cases"):
        load_gold_dir(tmp_path, Limits(max_cases=1))
    with pytest.raises(ConfigError, match="max_input_bytes"):
        load_gold_dir(tmp_path, Limits(max_input_bytes=10))


def test_pdf_extracted_text_limit(tmp_path):
    (tmp_path / "a.pdf").write_bytes(make_pdf([["word " * 20]]))
    gold(tmp_path / "a.gold.json", {"k": 1})
    with pytest.raises(ConfigError, match="extracted text"):
        load_gold_dir(tmp_path, Limits(max_input_bytes=20))


def test_not_a_gold_dir(tmp_path):
    assert not is_gold_dir(tmp_path)
    assert not is_gold_dir(tmp_path / "missing")
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    assert not is_gold_dir(tmp_path / "a.txt")
    with pytest.raises(ConfigError, match="no document"):
        load_gold_dir(tmp_path)
    with pytest.raises(ConfigError, match="not found"):
        load_gold_dir(tmp_path / "missing")


def test_missing_pypdf_is_an_install_hint(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "a.pdf").write_bytes(make_pdf([["x"]]))
    gold(tmp_path / "a.gold.json", {"k": 1})
    real_import = builtins.__import__

    def no_pypdf(name, *args, **kwargs):
        if name == "pypdf":
            raise ImportError("No module named 'pypdf'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pypdf)
    with pytest.raises(ConfigError) as err:
        load_gold_dir(tmp_path)
    assert "pip install 'scoreboard[pdf]'" in str(err.value)
    assert "\n" not in str(err.value)


def test_run_and_validate_a_gold_directory_end_to_end(tmp_path):
    """`--cases DIR` through the CLI: a PDF and a text document graded, a corrupt PDF an
    execution error naming the file, a document without gold listed as skipped in the report."""
    import subprocess
    import sys

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.pdf").write_bytes(make_pdf([["Total due: 42 EUR"]]))
    gold(docs / "a.gold.json", {"total": 42})
    (docs / "b.txt").write_text("Total due: 7 EUR\n")
    gold(docs / "b.gold.json", {"total": 7})
    (docs / "c.pdf").write_bytes(b"not a pdf at all")
    gold(docs / "c.gold.json", {"total": 1})
    (docs / "d.txt").write_text("no gold for me\n")
    (tmp_path / "ext.py").write_text("import re\ndef f(text):\n    m = re.search(r'(\\d+)', text)\n"
                                     "    return {'total': int(m.group(1)) if m else None}\n")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)

    checked = cli("validate", "docs")
    assert checked.returncode == 0 and "3 cases" in checked.stdout and "1 document" in checked.stdout
    done = cli("run", "--cases", "docs", "--subject", "python:ext:f", "--grader", "json-fields",
               "--format", "json,md", "--output-dir", "out", "--no-progress")
    assert done.returncode == 2, done.stdout + done.stderr  # the corrupt PDF is an execution error
    assert "EOF marker" not in done.stderr  # pypdf's own warnings stay out of the terminal
    (report_path,) = (tmp_path / "out" / "docs").glob("*.json")
    report = json.loads(report_path.read_text())
    status = {a["case_id"]: (a["status"], a["error"]) for a in report["attempts"]}
    assert status["a"] == ("passed", None) and status["b"] == ("passed", None)
    assert status["c"][0] == "error" and "c.pdf" in status["c"][1]
    assert report["plan"]["skipped"][0]["document"] == "d.txt"
    assert "d.txt" in report_path.with_suffix(".md").read_text()
