"""The command's edges: `python -m idxcheck` run inside the scanned tree imports nothing from
it; a report or baseline that cannot be written is a clear error (exit 2) that leaves nothing
behind and the previous file as it was; a profile name that is not a profile is a
configuration error. And the project's downloads (a vLLM release's source, the SARIF SDK's
schema) go to the package index pip or npm is configured with, not to an address of ours."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from ..conftest import FIXTURES

BUG = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"


def run(
    *args: str, cwd: Path | None = None, python: tuple[str, ...] = (), **kwargs: object
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(
        [sys.executable, *python, "-m", "idxcheck", *args],
        cwd=cwd,
        env=env,
        text=True,
        timeout=120,
        check=False,
        **streams,  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------------------------------------
# python -m idxcheck inside the scanned tree

# What `python -m idxcheck scan` imports, found by running one: each name gets a module of the
# tree that records that it ran.
IMPORTED = """
import sys
from idxcheck.cli import main
try:
    main(["scan", sys.argv[1], "--no-cache", "--format", "json", "-o", sys.argv[2]])
except SystemExit:
    pass
print("\\n".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.fixture(scope="module")
def shadowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    base = tmp_path_factory.mktemp("shadow")
    proc = subprocess.run(
        [sys.executable, "-c", IMPORTED, str(BUG), str(base / "r.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    names = set(proc.stdout.split()) - set(sys.builtin_module_names) - {"__main__", "idxcheck"}
    # and what the interpreter's `-m` machinery may import on its way to idxcheck.__main__
    names |= {"runpy", "pkgutil", "importlib", "json", "dataclasses", "re", "click", "typing"}
    assert {"json", "dataclasses", "click", "libcst", "z3"} <= names
    tree, markers = base / "tree", base / "markers"
    tree.mkdir()
    markers.mkdir()
    (tree / "backend.py").write_text(BUG.read_text())
    for name in sorted(names):
        (tree / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    return tree, markers, sorted(names)


@pytest.mark.parametrize("python", [(), ("-P",)], ids=["-m", "-P -m"])
def test_python_m_imports_nothing_from_the_scanned_tree(
    shadowed: tuple[Path, Path, list[str]], python: tuple[str, ...]
) -> None:
    tree, markers, names = shadowed
    for marker in markers.iterdir():
        marker.unlink()
    proc = run("scan", ".", "--no-cache", cwd=tree, python=python)
    ran = sorted(p.name for p in markers.iterdir())
    assert ran == [], f"the tree's modules ran: {ran}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr  # the backend's findings, reported as usual
    assert "backend.py:29:19: IDX001" in proc.stdout
    assert len(names) > 50  # the standard library's modules among them, not only ours


# ---------------------------------------------------------------------------------------------
# reports and baselines that cannot be written


def _limit_file_size() -> None:
    # A full disk, for this process only: a write past 256 bytes fails with EFBIG (the signal
    # it would also raise is ignored). Both files are larger.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))


@pytest.mark.parametrize("option", ["--format=json={}", "--write-baseline={}"])
def test_a_write_that_fails_keeps_the_previous_file_and_leaves_nothing(
    tmp_path: Path, option: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "report.json"
    target.write_text("the previous report\n")
    proc = run(
        "scan", str(BUG), "--no-cache", "--explain", option.format(target),
        preexec_fn=_limit_file_size,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"idxcheck: cannot write {target}: File too large" in proc.stderr
    assert "internal error" not in proc.stderr
    assert target.read_text() == "the previous report\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]


@pytest.mark.parametrize("option", ["--format=sarif={}", "--write-baseline={}", "--output={}"])
def test_a_path_under_a_regular_file_is_a_clear_error(tmp_path: Path, option: str) -> None:
    regular = tmp_path / "regular"
    regular.write_text("x")
    for target in (regular / "report.sarif", regular / "sub" / "report.sarif"):
        args = [option.format(target)] + (["--format=json"] if "output" in option else [])
        proc = run("scan", str(BUG), "--no-cache", *args)
        assert proc.returncode == 2, proc.stderr
        assert f"idxcheck: cannot write {target}: " in proc.stderr
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["regular"]


def test_a_full_device_is_a_clear_error() -> None:
    for args in (["--format", "json=/dev/full"], ["--format", "json"]):
        with open("/dev/full", "w") as full:
            proc = run("scan", str(BUG), "--no-cache", *args, stdout=full, stderr=subprocess.PIPE)
        assert proc.returncode == 2, proc.stderr
        assert "No space left on device" in proc.stderr, proc.stderr
        assert "internal error" not in proc.stderr


def test_a_device_or_a_link_is_written_not_replaced(tmp_path: Path) -> None:
    # /dev/stdout (a pipe here) cannot be replaced by a regular file: it is written into.
    proc = run("scan", str(BUG), "--no-cache", "--format", "json=/dev/stdout")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["findings"]
    assert os.path.islink("/dev/stdout")
    # A link to a report: the file it names gets the new report, and the link stays.
    real = tmp_path / "real.json"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    proc = run("scan", str(BUG), "--no-cache", "--format", f"json={link}")
    assert proc.returncode == 1, proc.stderr
    assert link.is_symlink() and json.loads(real.read_text())["findings"]
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


# ---------------------------------------------------------------------------------------------
# profile names


@pytest.mark.parametrize("name", ["__init__", "sglang.x", "", "../sglang"])
def test_a_profile_name_that_is_no_profile_is_a_configuration_error(
    tmp_path: Path, name: str
) -> None:
    (tmp_path / "backend.py").write_text(BUG.read_text())
    (tmp_path / "pyproject.toml").write_text(f'[tool.idxcheck]\nprofile = "{name}"\n')
    # (an empty --profile is no option: click passes it as not given)
    for args, given in (([], name), (["--isolated", "--profile", name or "-"], name or "-")):
        proc = run("scan", ".", "--no-cache", *args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert f"unknown profile {given!r}; profiles: sglang" in proc.stderr, proc.stderr
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    proc = run("scan", ".", "--no-cache", cwd=tmp_path)
    assert "pyproject.toml" in proc.stderr  # the file and key are named


# ---------------------------------------------------------------------------------------------
# downloads go where the package tools are configured to go

VLLM_VERSION = "0.33.0"
SDIST = f"vllm-{VLLM_VERSION}.tar.gz"


def _sdist() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, text in (
            (f"vllm-{VLLM_VERSION}/vllm/__init__.py", "MIRRORED = True\n"),
            (f"vllm-{VLLM_VERSION}/vllm/attention/backend.py", "x = 1\n"),
            (f"vllm-{VLLM_VERSION}/setup.py", "raise SystemExit\n"),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


class Mirror:
    """A package index on this machine (a mirror or a private index): its project page as
    PEP 691 JSON or PEP 503 HTML, and the files it lists."""

    def __init__(self, page: str, sha256: str = "", password: str = "") -> None:
        self.archive = _sdist()
        self.sha256 = sha256 or hashlib.sha256(self.archive).hexdigest()  # else: the wrong one
        self.page, self.password = page, password
        self.requests: list[tuple[str, str]] = []  # (path, Authorization)
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                auth = self.headers.get("Authorization", "")
                mirror.requests.append((self.path, auth))
                if mirror.password:
                    secret = base64.b64encode(f"ci:{mirror.password}".encode()).decode()
                    if auth != f"Basic {secret}":
                        self.send_error(401)
                        return
                body, kind = mirror.respond(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def respond(self, path: str) -> tuple[bytes | None, str]:
        if path == "/simple/vllm/":
            if self.page == "json":
                doc = {
                    "meta": {"api-version": "1.0"},
                    "name": "vllm",
                    "files": [
                        {
                            "filename": SDIST,
                            "url": f"../../files/{SDIST}",
                            "hashes": {"sha256": self.sha256},
                        }
                    ],
                }
                return json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json"
            link = f'<a href="/files/{SDIST}#sha256={self.sha256}">{SDIST}</a>'
            return f"<html><body>{link}</body></html>".encode(), "text/html"
        if path == f"/files/{SDIST}":
            return self.archive, "application/octet-stream"
        return None, ""

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing but this machine answers (a proxy that does not exist for every other host), and
    no configuration file of pip's is read: only what the test sets."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("page", ["json", "html"])
def test_vllm_source_comes_from_the_index_pip_is_configured_with(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, page: str
) -> None:
    from bench import vllm_tree

    password = "s3cret" if page == "html" else ""  # a private index, credentials in its URL
    mirror = Mirror(page, password=password)
    try:
        index = mirror.url.replace("//", f"//ci:{password}@" if password else "//") + "/simple"
        monkeypatch.setenv("PIP_INDEX_URL", index)
        monkeypatch.setattr(vllm_tree, "CACHE", tmp_path / "cache")
        package = vllm_tree.vllm_tree(VLLM_VERSION)
    finally:
        mirror.close()
    assert (package / "__init__.py").read_text() == "MIRRORED = True\n"
    assert (package / "attention" / "backend.py").is_file()
    assert not (package.parent / "setup.py").exists()  # only the package folder is unpacked
    assert [path for path, _ in mirror.requests] == ["/simple/vllm/", f"/files/{SDIST}"]
    if password:
        assert all(auth.startswith("Basic ") for _, auth in mirror.requests)


def test_a_source_archive_that_is_not_the_index_s_is_not_kept(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bench import vllm_tree

    mirror = Mirror("json", "0" * 64)
    try:
        monkeypatch.setenv("PIP_INDEX_URL", mirror.url + "/simple")
        monkeypatch.setattr(vllm_tree, "CACHE", tmp_path / "cache")
        with pytest.raises(RuntimeError, match=f"{SDIST}: sha256 .* is not the index's"):
            vllm_tree.vllm_tree(VLLM_VERSION)
    finally:
        mirror.close()
    assert list((tmp_path / "cache" / "sdists").iterdir()) == []
    assert not (tmp_path / "cache" / "vllm").exists()


FAKE_NPM = """#!{python}
# npm as far as `npm pack SPEC --json --pack-destination DIR` goes: records its arguments and
# packs a tarball holding the schema member, whose text names the package asked for.
import io, json, sys, tarfile
args = sys.argv[1:]
open({log!r}, "a").write(json.dumps(args) + "\\n")
spec, folder = args[1], args[args.index("--pack-destination") + 1]
data = json.dumps({{"packed": spec}}).encode()
with tarfile.open(folder + "/schema.tgz", "w:gz") as archive:
    info = tarfile.TarInfo("package/lib/schemas/sarif-2.1.0-rtm.5.json")
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))
print(json.dumps([{{"filename": "schema.tgz"}}]))
"""


def test_the_sarif_schema_package_comes_through_npm(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from .. import sarif_check

    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    log = tmp_path / "npm.log"
    npm = bin_folder / "npm"
    npm.write_text(FAKE_NPM.format(python=sys.executable, log=str(log)))
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sarif_check, "NPM_CACHE", tmp_path / "cache" / "schema.json")
    path = sarif_check._npm_schema()
    assert json.loads(path.read_text()) == {"packed": "@microsoft/jest-sarif@1.0.0-beta.0"}
    [args] = [json.loads(line) for line in log.read_text().splitlines()]
    assert args[:2] == ["pack", "@microsoft/jest-sarif@1.0.0-beta.0"]
