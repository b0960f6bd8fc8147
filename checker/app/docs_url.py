"""Where the rule pages (`docs/rules/CODE.md`) are published, for reports that link them (the
SARIF rules' `helpUri`): the address of the docs folder.

- `$IDXCHECK_DOCS_URL`, the address of the docs folder (a fork's, a mirror's, a docs site's);
- else from the `Repository` (or `Source`) URL of the installed distribution's metadata
  (`[project.urls]` in pyproject.toml): on GitHub and GitLab its `blob/HEAD/docs`, the docs of
  the default branch;
- else none: reports then link no page (`helpUri` is optional in SARIF)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

DOCS_URL_ENV = "IDXCHECK_DOCS_URL"
# Project-URL labels that name the repository, in the order they are tried; matched as
# pip normalises them (case, spaces, dashes and underscores ignored).
REPOSITORY_LABELS = ("repository", "source", "sourcecode")
# Forges whose file pages are `<repository>/<BLOB>/<ref>/<path>`; HEAD is the default branch.
FORGE_BLOB = {"github.com": "blob", "gitlab.com": "-/blob"}


class DocsUrlError(ValueError):
    """$IDXCHECK_DOCS_URL is set to something that is not an absolute http(s) address."""


def docs_url(
    environ: Mapping[str, str] | None = None, project_urls: Sequence[str] | None = None
) -> str:
    """The docs folder's address without a trailing slash, or "" where none is known.
    `project_urls` are the metadata's `Project-URL` entries ("Label, URL")."""
    env = os.environ if environ is None else environ
    configured = env.get(DOCS_URL_ENV, "").strip()
    if configured:
        if not _absolute(configured):
            raise DocsUrlError(
                f"{DOCS_URL_ENV}={configured!r} is not an absolute http(s) address "
                "(the address of idxcheck's docs folder, e.g. "
                "https://github.com/OWNER/idxcheck/blob/main/docs)"
            )
        return configured.rstrip("/")
    entries = _installed_project_urls() if project_urls is None else project_urls
    urls = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        urls[_label(label)] = url.strip()
    for label in REPOSITORY_LABELS:
        derived = _forge_docs(urls.get(label, ""))
        if derived:
            return derived
    return ""


def _label(label: str) -> str:
    return "".join(ch for ch in label.lower() if ch.isalnum())


def _absolute(url: str) -> bool:
    if any(ch.isspace() for ch in url):
        return False
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _forge_docs(repository: str) -> str:
    if not _absolute(repository):
        return ""
    parts = urlsplit(repository)
    blob = FORGE_BLOB.get(parts.netloc.lower())
    path = parts.path.strip("/").removesuffix(".git")
    if blob is None or path.count("/") < 1 or parts.query or parts.fragment:
        return ""  # not a forge whose file pages we know, or not a repository's address
    return f"https://{parts.netloc}/{path}/{blob}/HEAD/docs"


def _installed_project_urls() -> list[str]:
    from importlib import metadata

    try:
        return list(metadata.metadata("idxcheck").get_all("Project-URL") or [])
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        return []
