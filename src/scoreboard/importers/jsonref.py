"""JSON References in a promptfoo config, resolved as promptfoo's dereferenceConfig resolves them
(util/config/load.ts: `$RefParser.dereference(config)`, @apidevtools/json-schema-ref-parser).

`{$ref: '#/assertionTemplates/x'}` is replaced by the value that JSON pointer names in the config
(`~1` is `/`, `~0` is `~`, percent escapes decoded; a list is indexed by number), and
`{$ref: 'file.yaml#/x'}` by a value of a JSON or YAML file in the config's folder. Keys written
beside `$ref` are laid over a referenced mapping (the parser's extended refs). The parameters of a
provider's `functions` and `tools` are left as written (they are JSON schemas, whose own `$ref`s
promptfoo keeps). A reference that names nothing, leaves the folder, points at a URL or at itself
is a one-line error (promptfoo stops loading the config); so is a config that references expand
past MAX_NODES values (a few references to references can describe an exponentially large value).
"""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import unquote

from .common import Source

#: the most values (mappings, lists, scalars) the dereferenced config may hold
MAX_NODES = 2_000_000


class _Deref:
    def __init__(self, source: Source):
        self.source = source
        self.documents: dict[str, Any] = {}
        self.nodes = 0

    def document(self, name: str, where: str) -> Any:
        if name not in self.documents:
            if "://" in name:
                raise self.source.error(f"$ref {name!r}: a reference to a URL is not fetched", where)
            self.documents[name] = self.source.read_data(name, where)
        return self.documents[name]

    def target(self, ref: str, doc: str, where: str) -> tuple[Any, str]:
        file, _, pointer = ref.partition("#")
        if file and "://" not in file and "/" in doc:  # a file's references are relative to its folder
            file = posixpath.normpath(posixpath.join(posixpath.dirname(doc), file))
        doc = file or doc
        value = self.document(doc, where)
        if pointer and not pointer.startswith("/"):
            raise self.source.error(f"$ref {ref!r}: a JSON pointer after '#' starts with '/'", where)
        for part in pointer.split("/")[1:] if pointer else []:
            key = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                raise self.source.error(f"$ref {ref!r} names nothing in {doc or 'the config'}", where)
        return value, doc

    def walk(self, value: Any, doc: str, where: str, active: tuple[str, ...], keep: bool = False) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.source.error(f"the $refs expand the config past {MAX_NODES} values", where)
        if isinstance(value, list):
            return [self.walk(v, doc, f"{where}.{i}", active) for i, v in enumerate(value)]
        if not isinstance(value, dict) or keep:
            return value
        ref = value.get("$ref")
        if isinstance(ref, str):
            key = f"{doc}#{ref}" if ref.startswith("#") else ref
            if key in active:
                raise self.source.error(f"$ref {ref!r} refers to itself (a cycle)", where)
            resolved, target_doc = self.target(ref, doc, where)
            resolved = self.walk(resolved, target_doc, where, (*active, key))
            extra = {k: v for k, v in value.items() if k != "$ref"}
            if extra and isinstance(resolved, dict):  # an extended $ref: its own keys win
                return {**resolved, **{k: self.walk(v, doc, f"{where}.{k}", active) for k, v in extra.items()}}
            return resolved
        out = {}
        for k, v in value.items():
            # dereferenceConfig keeps the JSON schemas of providers' functions and tools as written
            schema = k == "parameters" and (".functions." in where or ".tools." in where) \
                and where.startswith("providers.")
            out[k] = self.walk(v, doc, f"{where}.{k}", active, keep=schema)
        return out


def has_ref(value: Any) -> bool:
    """Whether any mapping in value has a `$ref` key."""
    if isinstance(value, dict):
        return "$ref" in value or any(has_ref(v) for v in value.values())
    if isinstance(value, list):
        return any(has_ref(v) for v in value)
    return False


def dereference(config: dict, source: Source) -> dict:
    """The config with every JSON Reference replaced by what it names (the config unchanged when
    it has none)."""
    if not has_ref(config):
        return config
    deref = _Deref(source)
    deref.documents[""] = config
    return {k: deref.walk(v, "", k, ()) for k, v in config.items()}


def dereference_file(value: Any, name: str, source: Source) -> Any:
    """A tests file's content (`name`, relative to the config's folder) with its references
    resolved against itself, as loadTestsFromGlob dereferences each tests file."""
    if not has_ref(value):
        return value
    deref = _Deref(source)
    deref.documents[name] = value
    return deref.walk(value, name, name, ())
