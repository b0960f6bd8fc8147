"""A file of a package's release, taken from the package indexes pip is configured with, so that
a download goes where `pip download` would go: a mirror, a proxy index or a private index with
credentials in its URL included.

pip's settings come from `pip config list` (its configuration files and PIP_* variables, as pip
merges them for `pip download`): `index-url` (pip's own default when unset),
`extra-index-url`, `no-index`, `cert`, `proxy` and `timeout`. Each index's project page is read
as PEP 691 JSON or PEP 503 HTML (what pip reads), the file's sha256 is taken from it and
checked, and nothing is downloaded that the index does not give a sha256 for."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import re
import ssl
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
# pip reads `global`, then the command's section, then PIP_* variables; later ones win.
SECTIONS = ("global", "download", ":env:")


@dataclass(frozen=True)
class Release:
    filename: str
    url: str
    sha256: str


def pip_settings() -> dict[str, str]:
    """pip's merged settings for `pip download`, by option name."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[str, dict[str, str]] = {}
    for line in listed.splitlines():
        key, sep, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if sep and section in SECTIONS:
            found.setdefault(section, {})[name] = str(ast.literal_eval(value))
    merged: dict[str, str] = {}
    for section in SECTIONS:
        merged.update(found.get(section, {}))
    return merged


def _default_index() -> str:
    # pip's own default, read from pip rather than written here.
    from pip._internal.models.index import PyPI

    return str(PyPI.simple_url)


def index_urls(settings: dict[str, str]) -> list[str]:
    if _truthy(settings.get("no-index", "")):
        return []
    first = settings.get("index-url") or _default_index()
    return [first, *settings.get("extra-index-url", "").split()]


def _truthy(text: str) -> bool:
    return text.lower() in ("1", "true", "yes", "on")


class _Client:
    """urllib with pip's certificate bundle, proxy, timeout and URL credentials."""

    def __init__(self, settings: dict[str, str]) -> None:
        handlers: list[urllib.request.BaseHandler] = []
        if settings.get("proxy"):
            proxy = settings["proxy"]
            handlers.append(urllib.request.ProxyHandler({"http": proxy, "https": proxy}))
        context = ssl.create_default_context(cafile=settings.get("cert") or None)
        handlers.append(urllib.request.HTTPSHandler(context=context))
        self.opener = urllib.request.build_opener(*handlers)
        self.timeout = float(settings.get("timeout") or settings.get("default-timeout") or 120)
        self.credentials: dict[str, str] = {}

    def learn(self, url: str) -> str:
        """`url` without its `user:password@`, remembered for its host."""
        parts = urlsplit(url)
        if parts.username is None:
            return url
        secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        host = parts.hostname or ""
        self.credentials[host] = base64.b64encode(secret.encode()).decode()
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))

    def open(self, url: str, accept: str = "*/*") -> tuple[bytes, str]:
        request = urllib.request.Request(url, headers={"Accept": accept})
        auth = self.credentials.get(urlsplit(url).hostname or "")
        if auth:
            request.add_header("Authorization", f"Basic {auth}")
        with self.opener.open(request, timeout=self.timeout) as response:
            kind = response.headers.get("Content-Type", "") if response.headers else ""
            return response.read(), kind


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def _releases(page: bytes, kind: str, page_url: str) -> list[Release]:
    if "json" in kind:
        doc = json.loads(page)
        return [
            Release(
                f["filename"], urljoin(page_url, f["url"]), f.get("hashes", {}).get("sha256", "")
            )
            for f in doc.get("files", [])
        ]
    anchors = _Anchors()
    anchors.feed(page.decode("utf-8", "replace"))
    found = []
    for href, text in anchors.links:
        url, _, fragment = href.partition("#")
        digest = re.fullmatch(r"sha256=([0-9a-fA-F]{64})", fragment)
        name = text or unquote(url.rsplit("/", 1)[-1])
        found.append(Release(name, urljoin(page_url, url), digest.group(1) if digest else ""))
    return found


def _project_page(index: str, project: str) -> str:
    page = index.rstrip("/") + f"/{project}/"
    if page.startswith("file:") and os.path.isdir(urllib.request.url2pathname(urlsplit(page).path)):
        page += "index.html"  # a folder laid out as an index
    return page


def find(
    project: str, filename: str, settings: dict[str, str] | None = None
) -> tuple[Release, _Client]:
    """Where `filename` of `project` is on pip's indexes, the first that lists it."""
    settings = pip_settings() if settings is None else settings
    client = _Client(settings)
    indexes = index_urls(settings)
    tried = []
    for index in indexes:
        page_url = _project_page(client.learn(index), project)
        try:
            page, kind = client.open(page_url, ACCEPT)
        except OSError as exc:  # urllib's URLError and HTTPError are OSErrors
            tried.append(f"{page_url}: {exc}")
            continue
        for release in _releases(page, kind, page_url):
            if release.filename == filename:
                if not release.sha256:
                    raise RuntimeError(f"{page_url} gives no sha256 for {filename}")
                return release, client
        tried.append(f"{page_url}: no {filename}")
    where = "; ".join(tried) if tried else "pip is configured with no index (no-index)"
    raise RuntimeError(f"{filename} is on none of pip's indexes ({where})")


def download(project: str, filename: str, target: Path) -> Path:
    """`filename` of `project` into `target` (a file path), checked against the index's sha256;
    nothing is left at `target` unless it matches."""
    release, client = find(project, filename)
    partial = target.with_name(target.name + ".part")
    data, _ = client.open(release.url)
    digest = hashlib.sha256(data).hexdigest()
    if digest != release.sha256.lower():
        raise RuntimeError(f"{filename}: sha256 {digest} is not the index's {release.sha256}")
    partial.write_bytes(data)
    partial.replace(target)
    return target
