"""A profile module defines only constants of the schema (`idxcheck.profiles.constants`), every
required one, and the schema's reader reads exactly the constants the table documents."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from idxcheck.profiles.constants import BY_NAME, CONSTANTS
from idxcheck.profiles.schema import available_profiles, load_profile

SCHEMA = Path(__file__).resolve().parent.parent / "checker" / "profiles" / "schema.py"


@pytest.mark.parametrize("name", available_profiles())
def test_a_profile_defines_the_schema_s_constants_only(name: str) -> None:
    module = importlib.import_module(f"idxcheck.profiles.{name}")
    defined = {n for n in vars(module) if n.isupper()}
    assert defined - set(BY_NAME) == set(), "constants the schema does not document"
    required = {c.name for c in CONSTANTS if c.required}
    assert required - defined == set(), "required constants missing"
    assert load_profile(name).name == name


def test_the_reader_reads_what_the_table_documents() -> None:
    text = SCHEMA.read_text()
    read = set(re.findall(r"module\.([A-Z_]+)", text))
    read |= set(re.findall(r'getattr\(module, "([A-Z_]+)"', text))
    read |= set(re.findall(r'_pattern\(module, "([A-Z_]+)"\)', text))
    assert read == set(BY_NAME)


def test_an_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown profile '__init__'; profiles: sglang, vllm"):
        load_profile("__init__")
    with pytest.raises(ValueError, match="unknown profile 'schema'"):
        load_profile("schema")
