"""Validation of SARIF output against the official SARIF 2.1.0 JSON schema.

The schema is read from $IDXCHECK_SARIF_SCHEMA, else from the shared folder beside the
repository (`../shared/schemas/sarif-schema-2.1.0.json`); it is never copied into the repository.
A missing schema fails the test that needs it, with this explanation, rather than skipping it."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_ENV = "IDXCHECK_SARIF_SCHEMA"


def schema_path() -> Path:
    configured = os.environ.get(SCHEMA_ENV)
    return (
        Path(configured)
        if configured
        else ROOT.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
    )


@lru_cache(maxsize=1)
def _validator() -> Any:
    path = schema_path()
    if not path.is_file():
        pytest.fail(
            f"the SARIF 2.1.0 schema is not at {path}: set {SCHEMA_ENV} to the official "
            "sarif-schema-2.1.0.json",
            pytrace=False,
        )
    schema = json.loads(path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def assert_valid_sarif(doc: Any) -> None:
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10]
    )
    assert doc["version"] == "2.1.0"
    assert doc["$schema"] == _validator().schema["id"]  # names the schema it was checked against


def assert_valid_sarif_file(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert_valid_sarif(doc)
    return doc
