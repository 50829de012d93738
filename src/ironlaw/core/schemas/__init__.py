"""JSON Schema files for every JSON result ironlaw writes (``"schema": "ironlaw.<name>/1"``).

Each file ``<name>.schema.json`` (draft 2020-12) names the fields a reader may rely on; later versions of the
same schema may add fields, so every object allows additional properties. ``validate(doc)`` checks a document
against the schema it names (needs the ``jsonschema`` package: ``pip install jsonschema``).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..errors import IronlawError

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    """Every schema id shipped, e.g. 'ironlaw.estimate/1'."""
    return sorted(f"ironlaw.{p.name[:-len('.schema.json')]}/1" for p in HERE.glob("*.schema.json"))


def path(schema_id: str) -> Path:
    """The file of one schema id ('ironlaw.estimate/1' → estimate.schema.json)."""
    name = schema_id.removeprefix("ironlaw.").removesuffix("/1")
    p = HERE / f"{name}.schema.json"
    if not schema_id.startswith("ironlaw.") or not schema_id.endswith("/1") or not p.exists():
        raise IronlawError(f"no JSON schema '{schema_id}'; shipped: {', '.join(names())}")
    return p


@lru_cache(maxsize=None)
def load(schema_id: str) -> dict:
    return json.loads(path(schema_id).read_text())


def validate(doc: dict) -> None:
    """Raise jsonschema.ValidationError unless ``doc`` matches the schema its ``"schema"`` field names; an
    IronlawError (one line) where ``doc`` names no schema or jsonschema is not installed."""
    if not isinstance(doc, dict) or not isinstance(doc.get("schema"), str):
        raise IronlawError(f"validate takes a JSON document (a dict) with a \"schema\" field naming its schema, "
                           f"got {type(doc).__name__}" + (" without one" if isinstance(doc, dict) else ""))
    try:
        import jsonschema
        from referencing import Registry, Resource
    except ImportError:
        raise IronlawError("checking a document against its schema needs the jsonschema package: "
                           "pip install jsonschema") from None

    registry = Registry().with_resources((f"urn:{sid}", Resource.from_contents(load(sid))) for sid in names())
    jsonschema.Draft202012Validator(load(doc["schema"]), registry=registry).validate(doc)
