"""Two deterministic, regex-based "extractors" for the synthetic invoice demo.

They stand in for two prompt/skill variants of an LLM extraction pipeline so the demo runs
offline. Both share the same low-level table and date parsing; they differ only in the
document-level decisions a careless extractor typically gets wrong:

* `basic` uses fixed invoice defaults: every document is an "invoice", the currency is
  "EUR" unless an ISO code sits on the subtotal line, the VAT rate is 19 when no percentage
  is printed, the total is recomputed as sum(quantity * unit_price) + VAT (so discounts
  are lost), units outside {pcs, kg, hours, m} become "pcs" (a rental "day" included) and
  missing prices become 0.
* `careful` reads the document title, the stated grand total, the currency (ISO code or
  symbol), the VAT rate (0 for exempt / reverse-charge lines without a percentage) and keeps
  absent prices and totals as null.

Signature (python subject): fn(input, skill=None, run=0) -> dict. Pure stdlib.
"""

from __future__ import annotations

import re
from datetime import date

__all__ = ["basic", "careful"]

MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december"], start=1)}
MONTHS.update({name[:3]: num for name, num in list(MONTHS.items())})

ISO = ("EUR", "USD", "GBP", "CHF")
SYMBOLS = (("€", "EUR"), ("£", "GBP"), ("$", "USD"), ("SFr.", "CHF"), ("Fr.", "CHF"))
_MONEY_PREFIX = re.compile(r"^-?\s*(?:EUR|USD|GBP|CHF|SFr\.|Fr\.|€|\$|£)\s*", re.I)
_NUMBER = re.compile(r"^-?\d[\d.,]*$")
_UNIT = re.compile(r"^[A-Za-z]{1,8}\.?$")
_SPLIT = re.compile(r"\s*\|\s*|\s{2,}")
_INLINE_ROW = re.compile(  # "Translation ...   38 hours x 52.00 = 1,976.00"
    r"^(?P<desc>\S.*?)\s{2,}(?P<qty>\d[\d.,]*)\s+(?P<unit>[A-Za-z]+)\s+x\s+"
    r"(?P<price>\S+)\s*=\s*(?P<amount>\S+)\s*$")
_TITLE_WORDS = ("INVOICE", "DELIVERY NOTE", "RECHNUNG", "FACTURE", "LIEFERSCHEIN")
_VAT_PCT = re.compile(
    r"\b(?:VAT|TVA|MwSt|MWST|USt|Sales tax|Tax)\b[^\n%]*?(\d+(?:[.,]\d+)?)\s*%", re.I)
_VAT_ZERO = re.compile(r"\b(?:exempt|reverse charge|not subject to VAT|VAT-free)\b", re.I)
_TOTAL_LINE = re.compile(
    r"\b(?:grand total|total due|amount due|balance due|invoice total|total amount|total|"
    r"gesamtbetrag)\b", re.I)


# ---------------------------------------------------------------- shared low-level parsing

def parse_number(text: str) -> float | None:
    """'1.245,00', '1,976.00', '$24.50', 'Fr. 39.00', '7,5' -> float; None if not a number."""
    s = _MONEY_PREFIX.sub("", text.strip()).replace(" ", "")
    negative = text.strip().startswith("-") or s.startswith("-")
    s = s.lstrip("-")
    if not _NUMBER.match(s):
        return None
    if "," in s and "." in s:
        if s.rfind(",") > s.rfind("."):  # German style 1.245,00
            s = s.replace(".", "").replace(",", ".")
        else:
            s = s.replace(",", "")
    elif "," in s:
        head, _, tail = s.rpartition(",")
        s = s.replace(",", "") if len(tail) == 3 and head else s.replace(",", ".")
    try:
        value = float(s)
    except ValueError:
        return None
    return -value if negative else value


def num(value: float | None, places: int = 4) -> int | float | None:
    """Canonical JSON number: integral values as int, others rounded."""
    if value is None:
        return None
    value = round(value, places)
    return int(value) if value == int(value) else value


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def is_title(line: str) -> bool:
    s = line.strip()
    return bool(s) and s == s.upper() and any(w in s for w in _TITLE_WORDS) and ":" not in s


def find_vendor(text: str) -> str | None:
    """First non-empty line after the synthetic banner that is not the document title."""
    for line in lines_of(text):
        s = line.strip()
        if not s or s.upper().startswith("SYNTHETIC DOCUMENT") or is_title(s):
            continue
        return s
    return None


def parse_date(value: str) -> str | None:
    value = value.strip()
    m = re.match(r"(\d{4})-(\d{2})-(\d{2})", value)
    if m:
        y, mo, d = map(int, m.groups())
    elif m := re.match(r"(\d{1,2})[./](\d{1,2})[./](\d{4})", value):  # European / UK order
        d, mo, y = map(int, m.groups())
    elif m := re.match(r"(\d{1,2})\.?\s+([A-Za-z]+)\.?\s+(\d{4})", value):
        d, y = int(m.group(1)), int(m.group(3))
        mo = MONTHS.get(m.group(2).lower()) or MONTHS.get(m.group(2).lower()[:3])
    elif m := re.match(r"([A-Za-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})", value):
        d, y = int(m.group(2)), int(m.group(3))
        mo = MONTHS.get(m.group(1).lower()) or MONTHS.get(m.group(1).lower()[:3])
    else:
        return None
    try:
        return date(y, mo, d).isoformat() if mo else None
    except ValueError:
        return None


def find_date(text: str) -> str | None:
    """The first `... date ...: <date>` line whose value parses as a date."""
    for line in lines_of(text):
        label, sep, value = line.partition(":")
        if sep and re.search(r"\b(?:date|datum)\b", label, re.I):
            parsed = parse_date(value)
            if parsed:
                return parsed
    return None


def find_number_label(text: str, invoice_only: bool) -> str | None:
    pattern = (r"(?:invoice|rechnungs?)\s*(?:no\.?|nr\.?|number|#)" if invoice_only
               else r"(?:invoice|rechnungs?|delivery note|document)?\s*(?:no\.?|nr\.?|number|#)")
    for line in lines_of(text):
        label, sep, value = line.partition(":")
        if sep and value.strip() and re.search(pattern + r"\s*$", label.strip(), re.I) \
                and not re.search(r"\b(?:customer|vat|order|po|tax|account)\b", label, re.I):
            return value.strip().split()[0]
    return None


def parse_items(text: str) -> list[dict]:
    """Table rows -> [{description, quantity, unit, unit_price or None}].

    Priced rows end in `qty unit price amount` (columns split on 2+ spaces or pipes) or
    read `desc  qty unit x price = amount`. When a document has no priced rows, unpriced
    rows `... desc qty unit` or `qty unit desc` are read (delivery notes). An indented line
    directly under an item row without numbers continues that row's description.
    """
    priced: list[dict] = []
    last: dict | None = None
    for line in lines_of(text):
        if not line.strip():
            last = None
            continue
        m = _INLINE_ROW.match(line.strip())
        if m and parse_number(m["qty"]) is not None and parse_number(m["price"]) is not None:
            last = {"description": m["desc"].strip(), "quantity": parse_number(m["qty"]),
                    "unit": m["unit"], "unit_price": parse_number(m["price"])}
            priced.append(last)
            continue
        cols = [c for c in _SPLIT.split(line.strip()) if c]
        if len(cols) >= 5:
            qty, unit, price, amount = (parse_number(cols[-4]), cols[-3],
                                        parse_number(cols[-2]), parse_number(cols[-1]))
            desc = cols[-5]
            if None not in (qty, price, amount) and _UNIT.match(unit) \
                    and parse_number(desc) is None:
                last = {"description": desc, "quantity": qty, "unit": unit,
                        "unit_price": price}
                priced.append(last)
                continue
        if last is not None and line[:1].isspace() and len(cols) == 1 \
                and not re.search(r"\d[.,]\d\d\b", line):
            last["description"] = f"{last['description']} {cols[0]}"
            continue
        last = None
    if priced:
        return priced

    unpriced: list[dict] = []
    for line in lines_of(text):
        cols = [c for c in _SPLIT.split(line.strip()) if c]
        if len(cols) < 3:
            continue
        if parse_number(cols[-2]) is not None and _UNIT.match(cols[-1]) \
                and parse_number(cols[-3]) is None and not cols[-3].endswith(":"):
            unpriced.append({"description": cols[-3], "quantity": parse_number(cols[-2]),
                             "unit": cols[-1], "unit_price": None})
        elif len(cols) == 3 and parse_number(cols[0]) is not None and _UNIT.match(cols[1]) \
                and parse_number(cols[2]) is None:
            unpriced.append({"description": cols[2], "quantity": parse_number(cols[0]),
                             "unit": cols[1], "unit_price": None})
    return unpriced


def vat_percent(text: str) -> float | None:
    m = _VAT_PCT.search(text)
    return parse_number(m.group(1)) if m else None


def _result(doc_type, vendor, number, when, currency, vat, total, items) -> dict:
    return {"document_type": doc_type, "vendor": vendor, "invoice_number": number,
            "date": when, "currency": currency, "vat_rate": num(vat), "total": num(total, 2),
            "line_items": [{"description": i["description"], "quantity": num(i["quantity"]),
                            "unit": i["unit"], "unit_price": num(i["unit_price"])}
                           for i in items]}


# ---------------------------------------------------------------- basic

_BASIC_UNITS = {"pcs", "kg", "hours", "m"}


def basic(input: str, skill: str | None = None, run: int = 0) -> dict:
    """Naive extractor with fixed invoice defaults (see module docstring)."""
    text = input
    items = parse_items(text)
    for item in items:
        if item["unit"].lower() not in _BASIC_UNITS:
            item["unit"] = "pcs"
        if item["unit_price"] is None:
            item["unit_price"] = 0.0
    currency = "EUR"
    for line in lines_of(text):
        if line.strip().lower().startswith("subtotal"):
            m = re.search(r"\b(EUR|USD|GBP|CHF)\b", line)
            if m:
                currency = m.group(1)
            break
    vat = vat_percent(text)
    if vat is None:
        vat = 19.0
    net = round(sum(i["quantity"] * i["unit_price"] for i in items), 2)
    total = round(net + round(net * vat / 100, 2), 2)
    return _result("invoice", find_vendor(text), find_number_label(text, invoice_only=False),
                   find_date(text), currency, vat, total, items)


# ---------------------------------------------------------------- careful

def _doc_type(text: str, items: list[dict]) -> str:
    titles = " ".join(line.strip() for line in lines_of(text) if is_title(line))
    if "DELIVERY NOTE" in titles or "LIEFERSCHEIN" in titles:
        return "delivery_note"
    if "RENTAL" in titles or "MIETE" in titles:
        return "rental_invoice"
    if titles:
        return "invoice"
    return "delivery_note" if items and all(i["unit_price"] is None for i in items) else "invoice"


def _currency(text: str) -> str | None:
    m = re.search(r"^\s*currency\s*:\s*([A-Z]{3})\b", text, re.I | re.M)
    if m:
        return m.group(1).upper()
    money_lines = [line for line in lines_of(text)
                   if re.search(r"\b(?:sub)?total|amount|due\b", line, re.I)]
    for line in reversed(money_lines):
        m = re.search(r"\b(EUR|USD|GBP|CHF)\b", line)
        if m:
            return m.group(1)
    counts = {code: len(re.findall(rf"\b{code}\b", text)) for code in ISO}
    best = max(counts, key=counts.get)
    if counts[best]:
        return best
    for symbol, code in SYMBOLS:
        if symbol in text:
            return code
    return None


def _stated_total(text: str) -> float | None:
    found = None
    for line in lines_of(text):
        s = line.strip()
        if not _TOTAL_LINE.search(s) or re.match(r"(?:sub|net)\b|subtotal", s, re.I):
            continue
        numbers = [parse_number(tok) for tok in re.findall(r"-?[\d][\d.,]*\d|\d", s)]
        numbers = [n for n in numbers if n is not None]
        if numbers:
            found = numbers[-1]
    return found


def careful(input: str, skill: str | None = None, run: int = 0) -> dict:
    """Extractor that reads the document instead of assuming (see module docstring)."""
    text = input
    items = parse_items(text)
    doc_type = _doc_type(text, items)
    has_prices = any(i["unit_price"] is not None for i in items)
    vat = vat_percent(text)
    if vat is None and _VAT_ZERO.search(text):
        vat = 0.0
    total = _stated_total(text) if has_prices or doc_type != "delivery_note" else None
    currency = _currency(text)
    number = None if doc_type == "delivery_note" else find_number_label(text, invoice_only=True)
    return _result(doc_type, find_vendor(text), number, find_date(text), currency, vat,
                   total, items)
