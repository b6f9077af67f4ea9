"""Prices of remote models: validation of a subject's `price` option, cost of a request, and the
cost bound a request is reserved against in the run's budget.

A price is {"input_per_mtok": USD, "output_per_mtok": USD} (dollars per million tokens), with an
optional "batch_discount" (the fraction a provider's batch API takes off both rates: 0.5 for
OpenAI's Batch API and Anthropic's Message Batches). A
subject's `price` may also be a table keyed by model name (so `--model` can switch models and
keep an honest cost): {"gpt-4o": {...}, "gpt-4o-mini": {...}}. No price, or a model missing from
the table, means the cost is unknown (None), never zero; so does a batched request whose price
names no batch_discount (its reservation is then bounded by the full price, which is never less).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
#: optional beside PRICE_KEYS: the fraction a batch API takes off both rates
DISCOUNT = "batch_discount"


def _one_price(value: Any, kind: str, where: str) -> dict:
    if not isinstance(value, dict) or not set(PRICE_KEYS) <= set(value) <= {*PRICE_KEYS, DISCOUNT}:
        raise ConfigError(f"subject {kind!r}: a price is {{input_per_mtok: USD, output_per_mtok: USD}} "
                          "(and optionally batch_discount: a fraction from 0 to 1)", field=where)
    out = {}
    if DISCOUNT in value:
        d = value[DISCOUNT]
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 <= d < 1:
            raise ConfigError(f"subject {kind!r}: batch_discount must be a fraction >= 0 and < 1 "
                              "(0.5: half price)", field=f"{where}.{DISCOUNT}")
        out[DISCOUNT] = float(d)
    for key in PRICE_KEYS:
        v = value[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"subject {kind!r}: {key} must be a number >= 0", field=f"{where}.{key}")
        out[key] = float(v)
    return out


def parse_price(value: Any, kind: str) -> dict | None:
    """Validate a `price` option: one price, or a table {model: price}. None stays None."""
    if value is None:
        return None
    if isinstance(value, dict) and value and set(value) <= {*PRICE_KEYS, DISCOUNT}:
        return _one_price(value, kind, "subject.price")
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        return {str(model): _one_price(p, kind, f"subject.price.{model}") for model, p in value.items()}
    raise ConfigError(f"subject {kind!r}: 'price' must be {{input_per_mtok, output_per_mtok}} "
                      "or a table {model: {input_per_mtok, output_per_mtok}}", field="subject.price")


def price_for(price: dict | None, model: str | None) -> dict | None:
    """The price that applies to `model` (a table is looked up by model name)."""
    if price is None or "input_per_mtok" in price:
        return price
    return price.get(model) if model is not None else None


def batch_price(price: dict | None) -> dict | None:
    """The price of a batched request: both rates less the batch discount; None (unknown) when
    there is no price or it names no batch_discount."""
    if price is None or DISCOUNT not in price:
        return None
    keep = 1.0 - price[DISCOUNT]
    return {key: price[key] * keep for key in PRICE_KEYS}


def cost_usd(price: dict | None, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """Cost of a request in USD; None when the price or any token count is unknown."""
    if price is None or input_tokens is None or output_tokens is None:
        return None
    return (input_tokens * price["input_per_mtok"] + output_tokens * price["output_per_mtok"]) / 1e6


def cost_bound(price: dict | None, input_bound: int | None, output_bound: int | None) -> float | None:
    """Most a request can cost given bounds on its tokens; None when unbounded or unpriced."""
    if price is None or input_bound is None or output_bound is None:
        return None
    return (input_bound * price["input_per_mtok"] + output_bound * price["output_per_mtok"]) / 1e6
