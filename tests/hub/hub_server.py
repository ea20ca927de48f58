"""A small Hub-compatible HTTP server for the tests: a STAND-IN for the Hugging Face Hub, not the Hub.

Standard library only. It implements the routes that ``huggingface_hub`` 2.x uses (with ``HF_HUB_DISABLE_XET=1``) to
create a repository, upload files in one commit and download them again:

==========================================================  ==================================================
``POST /api/repos/create``                                   create a model / dataset repository (409 if it exists)
``GET  /api/{type}s/{org}/{name}[/revision/{rev}]``          repository info (sha, siblings)
``POST /api/validate-yaml``                                  README front matter check (the delimiters only)
``POST /api/{type}s/{repo}/preupload/{rev}``                 upload mode per file: ``lfs`` for binary or big files
``POST /{prefix}{repo}.git/info/lfs/objects/batch``          LFS batch API: where to PUT each object
``PUT  /__lfs__/{sha256}`` / ``POST .../verify``             receive an LFS object (sha256 and size checked)
``POST /api/{type}s/{repo}/commit/{rev}``                    ndjson commit: regular files (base64), LFS pointers,
                                                             deletions; one atomic commit per request
``GET  /api/{type}s/{repo}/tree/{rev}[/{path}]``             file listing; ``POST .../paths-info/{rev}`` likewise
``GET  /api/{type}s/{repo}/refs`` and ``/commits/{rev}``     branches and history; ``POST .../branch/{name}``
``HEAD/GET /{prefix}{repo}/resolve/{rev}/{path}``            downloads with the Hub's headers (X-Repo-Commit,
                                                             ETag, X-Linked-Etag/-Size) and byte ranges
==========================================================  ==================================================

Errors carry the Hub's ``X-Error-Code`` header (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``) so that
``huggingface_hub`` raises its usual exceptions. Every request is recorded in ``server.log`` (method, path, status,
bytes received and sent), so a test can assert that the bytes really went over HTTP. No authentication, no pull
requests, no Xet storage; everything lives in memory.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
LFS_EXTENSIONS = (".safetensors", ".bin", ".arrow", ".parquet", ".pt", ".msgpack", ".h5", ".zip")
LFS_MIN_SIZE = 1_000_000
GITATTRIBUTES = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.parquet filter=lfs diff=lfs merge=lfs -text\n"


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(oid: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n".encode()


@dataclass
class StoredFile:
    data: bytes
    lfs_oid: str | None = None  # sha256 of the content when stored as an LFS object

    def entry(self, path: str) -> dict:
        item = {"type": "file", "path": path, "size": len(self.data)}
        if self.lfs_oid:
            pointer = lfs_pointer(self.lfs_oid, len(self.data))
            item["oid"] = git_blob_sha1(pointer)
            item["lfs"] = {"oid": self.lfs_oid, "size": len(self.data), "pointerSize": len(pointer)}
        else:
            item["oid"] = git_blob_sha1(self.data)
        return item

    @property
    def etag(self) -> str:
        return self.lfs_oid or git_blob_sha1(self.data)


@dataclass
class Commit:
    oid: str
    parent: str | None
    title: str
    message: str
    files: dict[str, StoredFile]
    date: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool = False
    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit | None:
        revision = unquote(revision)
        revision = revision[len("refs/heads/") :] if revision.startswith("refs/heads/") else revision
        if revision in self.branches:
            return self.commits[self.branches[revision]]
        return self.commits.get(revision)


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class HubState:
    """The repositories, the LFS object store and the request log of one server."""

    def __init__(self):
        self.lock = threading.RLock()
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self.log: list[dict] = []
        self._counter = 0

    def new_oid(self, *parts: str) -> str:
        self._counter += 1
        return hashlib.sha1("\0".join((*parts, str(self._counter), str(time.time()))).encode()).hexdigest()

    def repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None:
            raise HubError(404, f"Repository Not Found: {repo_type} {repo_id}", "RepoNotFound")
        return repo

    def commit(self, repo: Repo, revision: str) -> Commit:
        commit = repo.resolve(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {unquote(revision)}", "RevisionNotFound")
        return commit

    def create_repo(self, repo_type: str, repo_id: str, private: bool) -> Repo:
        with self.lock:
            if (repo_type, repo_id) in self.repos:
                raise HubError(409, f"You already created this {repo_type} repo: {repo_id}")
            repo = Repo(repo_type, repo_id, private=private)
            oid = self.new_oid(repo_type, repo_id)
            repo.commits[oid] = Commit(oid, None, "initial commit", "", {".gitattributes": StoredFile(GITATTRIBUTES)})
            repo.branches["main"] = oid
            self.repos[(repo_type, repo_id)] = repo
            return repo

    def add_repo_from_files(self, repo_type: str, repo_id: str, files: dict[str, bytes]) -> Repo:
        """Seed a repository directly (e.g. a 'plain BERT' repo of another library)."""
        repo = self.create_repo(repo_type, repo_id, private=False)
        parent = repo.branches["main"]
        content = dict(repo.commits[parent].files)
        for path, data in files.items():
            lfs = path.endswith(LFS_EXTENSIONS)
            oid = hashlib.sha256(data).hexdigest() if lfs else None
            if oid:
                self.lfs_objects[oid] = data
            content[path] = StoredFile(data, oid)
        oid = self.new_oid(repo_id, "seed")
        repo.commits[oid] = Commit(oid, parent, "seed", "", content)
        repo.branches["main"] = oid
        return repo

    def requests(self, method: str | None = None, pattern: str | None = None) -> list[dict]:
        return [
            r
            for r in self.log
            if (method is None or r["method"] == method) and (pattern is None or re.search(pattern, r["path"]))
        ]


class HubRequestHandler(BaseHTTPRequestHandler):
    server_version = "hf-textcluster-test-hub/1.0"
    protocol_version = "HTTP/1.1"
    state: HubState  # set on the subclass made by `start_hub_server`

    # ----- plumbing ----------------------------------------------------------------------------------------------
    def log_message(self, format, *args):  # noqa: A002 - quiet: the test log replaces stderr noise
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, content_type="application/json"):
        self.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("Content-Type", content_type)
        headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._record["status"] = status
        self._record["bytes_out"] = 0 if self.command == "HEAD" else len(body)

    def _json(self, payload, status: int = 200, headers: dict | None = None):
        self._send(status, json.dumps(payload).encode(), headers)

    def _error(self, err: HubError):
        headers = {"X-Error-Message": err.message}
        if err.code:
            headers["X-Error-Code"] = err.code
        self._json({"error": err.message}, err.status, headers)

    def _handle(self):
        url = urlsplit(self.path)
        self._record = {
            "method": self.command,
            "path": unquote(url.path),
            "query": url.query,
            "status": None,
            "bytes_in": 0,
            "bytes_out": 0,
        }
        body = self._read_body() if self.command in ("POST", "PUT") else b""
        self._record["bytes_in"] = len(body)
        try:
            with self.state.lock:
                self._route(url.path, parse_qs(url.query), body)
        except HubError as err:
            self._error(err)
        except Exception as err:  # noqa: BLE001 - a server bug must show up in the client as a 500, not a hang
            self._error(HubError(500, f"{type(err).__name__}: {err}"))
        finally:
            self.state.log.append(self._record)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _handle

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    # ----- routing -----------------------------------------------------------------------------------------------
    def _route(self, raw_path: str, query: dict, body: bytes):
        path = raw_path
        method = self.command
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body or b"{}"))
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml(json.loads(body or b"{}"))
        if method == "GET" and path == "/api/whoami-v2":
            return self._json(
                {
                    "type": "user",
                    "name": "user",
                    "fullname": "Test User",
                    "orgs": [],
                    "auth": {"accessToken": {"role": "write"}},
                }
            )
        if path.startswith("/__lfs__/"):
            return self._lfs_object(method, path[len("/__lfs__/") :], body)
        match = re.fullmatch(r"/((?:datasets/|spaces/)?)([^/]+/[^/]+)\.git/info/lfs/objects/batch", path)
        if match and method == "POST":
            repo_type = {"": "model", "datasets/": "dataset", "spaces/": "space"}[match.group(1)]
            return self._lfs_batch(repo_type, match.group(2), json.loads(body or b"{}"))
        match = re.fullmatch(r"/api/(models|datasets|spaces)/([^/]+/[^/]+)(/.*)?", path)
        if match:
            return self._api(method, REPO_TYPES[match.group(1)], match.group(2), match.group(3) or "", query, body)
        match = re.fullmatch(r"/((?:datasets/|spaces/)?)([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if match and method in ("GET", "HEAD"):
            repo_type = {"": "model", "datasets/": "dataset", "spaces/": "space"}[match.group(1)]
            return self._resolve(repo_type, match.group(2), match.group(3), unquote(match.group(4)))
        raise HubError(404, f"Not implemented by the test Hub: {method} {path}")

    def _api(self, method, repo_type, repo_id, rest, query, body):
        repo = self.state.repo(repo_type, repo_id)
        if method == "GET" and rest in ("", "/"):
            return self._repo_info(repo, "main")
        if method == "GET" and rest.startswith("/revision/"):
            return self._repo_info(repo, rest[len("/revision/") :])
        if method == "POST" and rest.startswith("/preupload/"):
            return self._preupload(repo, rest[len("/preupload/") :], json.loads(body or b"{}"))
        if method == "POST" and rest.startswith("/commit/"):
            if query.get("create_pr"):
                raise HubError(400, "The test Hub does not support pull requests.")
            return self._commit(repo, rest[len("/commit/") :], body)
        if method == "GET" and rest.startswith("/tree/"):
            revision, _, subpath = rest[len("/tree/") :].partition("/")
            recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
            return self._tree(repo, revision, unquote(subpath).strip("/"), recursive)
        if method == "POST" and rest.startswith("/paths-info/"):
            return self._paths_info(repo, rest[len("/paths-info/") :], body)
        if method == "POST" and rest.startswith("/branch/"):
            branch = unquote(rest[len("/branch/") :])
            if branch in repo.branches:
                raise HubError(409, f"Branch {branch} already exists")
            start = json.loads(body or b"{}").get("startingPoint") or "main"
            repo.branches[branch] = self.state.commit(repo, start).oid
            return self._json({})
        if method == "GET" and rest == "/refs":
            return self._json(
                {
                    "branches": [
                        {"name": b, "ref": f"refs/heads/{b}", "targetCommit": oid} for b, oid in repo.branches.items()
                    ],
                    "tags": [],
                    "converts": [],
                }
            )
        if method == "GET" and rest.startswith("/commits/"):
            commit = self.state.commit(repo, rest[len("/commits/") :])
            history = []
            while commit is not None:
                history.append(
                    {
                        "id": commit.oid,
                        "title": commit.title,
                        "message": commit.message,
                        "authors": [{"user": "user"}],
                        "date": commit.date,
                    }
                )
                commit = repo.commits.get(commit.parent) if commit.parent else None
            return self._json(history)
        raise HubError(404, f"Not implemented by the test Hub: {method} /api/{repo_type}s/{repo_id}{rest}")

    # ----- repositories ------------------------------------------------------------------------------------------
    def _create_repo(self, payload: dict):
        repo_type = payload.get("type") or "model"
        name, organization = payload.get("name"), payload.get("organization") or "user"
        if not name or not re.fullmatch(r"[\w.-]+", name):
            raise HubError(400, f"Invalid repository name {name!r}")
        repo_id = f"{organization}/{name}"
        url = f"{self.base_url}/{URL_PREFIX[repo_type]}{repo_id}"
        try:
            self.state.create_repo(repo_type, repo_id, payload.get("visibility") == "private")
        except HubError as err:
            if err.status == 409:
                return self._json({"error": err.message, "url": url}, 409)
            raise
        return self._json({"url": url, "name": repo_id, "id": repo_id})

    def _repo_info(self, repo: Repo, revision: str):
        commit = self.state.commit(repo, revision)
        info = {
            "id": repo.repo_id,
            "_id": repo.repo_id,
            "sha": commit.oid,
            "private": repo.private,
            "disabled": False,
            "gated": False,
            "lastModified": commit.date,
            "createdAt": commit.date,
            "tags": [],
            "downloads": 0,
            "likes": 0,
            "author": repo.repo_id.split("/")[0],
            "siblings": [{"rfilename": path} for path in sorted(commit.files)],
        }
        if repo.repo_type == "model" and "config.json" in commit.files:
            try:
                config = json.loads(commit.files["config.json"].data)
                info["config"] = {k: config[k] for k in ("model_type", "architectures", "auto_map") if k in config}
            except ValueError:
                pass
        return self._json(info)

    def _validate_yaml(self, payload: dict):
        content = payload.get("content", "")
        if content.startswith("---") and content.find("\n---", 3) == -1:
            return self._json({"errors": [{"message": "unterminated YAML front matter"}]}, 400)
        return self._json({"errors": [], "warnings": []})

    # ----- uploads -----------------------------------------------------------------------------------------------
    def _preupload(self, repo: Repo, revision: str, payload: dict):
        commit = repo.resolve(revision)
        files = []
        for item in payload.get("files", []):
            sample = base64.b64decode(item.get("sample", ""))
            lfs = item["path"].endswith(LFS_EXTENSIONS) or item.get("size", 0) >= LFS_MIN_SIZE or b"\0" in sample
            existing = commit.files.get(item["path"]) if commit else None
            oid = None
            if existing is not None:
                oid = existing.lfs_oid if (lfs and existing.lfs_oid) else git_blob_sha1(existing.data)
            files.append(
                {"path": item["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": oid}
            )
        return self._json({"files": files, "commitOid": commit.oid if commit else None})

    def _lfs_batch(self, repo_type: str, repo_id: str, payload: dict):
        self.state.repo(repo_type, repo_id)
        if payload.get("operation") != "upload":
            raise HubError(400, "The test Hub only implements LFS uploads (downloads go through /resolve).")
        objects = []
        for obj in payload.get("objects", []):
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.state.lfs_objects:
                href = f"{self.base_url}/__lfs__/{obj['oid']}"
                entry["actions"] = {"upload": {"href": href, "header": {}}, "verify": {"href": f"{href}/verify"}}
            objects.append(entry)
        return self._json(
            {"transfer": "basic", "objects": objects}, headers={"Content-Type": "application/vnd.git-lfs+json"}
        )

    def _lfs_object(self, method: str, rest: str, body: bytes):
        oid, _, action = rest.partition("/")
        if method == "PUT" and not action:
            digest = hashlib.sha256(body).hexdigest()
            if digest != oid:
                raise HubError(400, f"LFS object sha256 mismatch: expected {oid}, received {digest}")
            self.state.lfs_objects[oid] = body
            return self._send(200, b"")
        if method == "POST" and action == "verify":
            payload = json.loads(body or b"{}")
            stored = self.state.lfs_objects.get(oid)
            if stored is None or len(stored) != payload.get("size", len(stored)):
                raise HubError(404, f"LFS object {oid} was not uploaded")
            return self._json({})
        raise HubError(404, f"Not implemented by the test Hub: {method} /__lfs__/{rest}")

    def _commit(self, repo: Repo, revision: str, body: bytes):
        branch = unquote(revision)
        parent_oid = repo.branches.get(branch)
        if parent_oid is None:
            raise HubError(
                404, f"Invalid rev id: {branch} (the test Hub commits to existing branches only)", "RevisionNotFound"
            )
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "A commit starts with a header line")
        header = lines[0]["value"]
        if header.get("parentCommit") and header["parentCommit"] != parent_oid:
            raise HubError(412, "A commit has happened since the parent commit. Please retry.")
        files = dict(repo.commits[parent_oid].files)
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                files[value["path"]] = StoredFile(base64.b64decode(value["content"]))
            elif key == "lfsFile":
                data = self.state.lfs_objects.get(value["oid"])
                if data is None:
                    raise HubError(400, f"LFS object {value['oid']} of {value['path']} was never uploaded")
                files[value["path"]] = StoredFile(data, value["oid"])
            elif key == "deletedFile":
                if files.pop(value["path"], None) is None:
                    raise HubError(404, f"A file with this name doesn't exist: {value['path']}", "EntryNotFound")
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                for path in [p for p in files if p.startswith(prefix)]:
                    del files[path]
            else:
                raise HubError(400, f"Unknown commit operation {key!r}")
        oid = self.state.new_oid(repo.repo_id, header.get("summary", ""))
        repo.commits[oid] = Commit(oid, parent_oid, header.get("summary", ""), header.get("description", ""), files)
        repo.branches[branch] = oid
        url = f"{self.base_url}/{URL_PREFIX[repo.repo_type]}{repo.repo_id}/commit/{oid}"
        return self._json({"success": True, "commitOid": oid, "commitUrl": url, "pullRequestUrl": None})

    # ----- listings and downloads --------------------------------------------------------------------------------
    def _entries(self, commit: Commit, subpath: str, recursive: bool) -> list[dict]:
        prefix = f"{subpath}/" if subpath else ""
        if subpath and subpath in commit.files:
            return [commit.files[subpath].entry(subpath)]
        entries, folders = [], set()
        for path in sorted(commit.files):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix) :]
            if "/" in rest and not recursive:
                folders.add(prefix + rest.split("/")[0])
                continue
            if recursive:
                parts = rest.split("/")[:-1]
                folders.update(prefix + "/".join(parts[: i + 1]) for i in range(len(parts)))
            entries.append(commit.files[path].entry(path))
        if subpath and not entries and not folders:
            raise HubError(404, f"{subpath} does not exist", "EntryNotFound")
        folder_entries = [
            {"type": "directory", "path": folder, "oid": hashlib.sha1(folder.encode()).hexdigest(), "size": 0}
            for folder in sorted(folders)
        ]
        return folder_entries + entries

    def _tree(self, repo: Repo, revision: str, subpath: str, recursive: bool):
        commit = self.state.commit(repo, revision)
        return self._json(self._entries(commit, subpath, recursive))

    def _paths_info(self, repo: Repo, revision: str, body: bytes):
        commit = self.state.commit(repo, revision)
        content_type = self.headers.get("Content-Type", "")
        if "json" in content_type:
            paths = json.loads(body or b"{}").get("paths", [])
        else:
            paths = parse_qs(body.decode()).get("paths", [])
        result = []
        for path in paths:
            path = path.strip("/")
            if path in commit.files:
                result.append(commit.files[path].entry(path))
            elif any(p.startswith(path + "/") for p in commit.files):
                result.append(
                    {"type": "directory", "path": path, "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0}
                )
        return self._json(result)

    def _resolve(self, repo_type: str, repo_id: str, revision: str, path: str):
        repo = self.state.repo(repo_type, repo_id)
        commit = self.state.commit(repo, revision)
        stored = commit.files.get(path)
        if stored is None:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        data = stored.data
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{stored.etag}"', "Accept-Ranges": "bytes"}
        if stored.lfs_oid:
            headers.update({"X-Linked-Etag": f'"{stored.lfs_oid}"', "X-Linked-Size": str(len(data))})
        status = 200
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if match and self.command == "GET":
            start = int(match.group(1)) if match.group(1) else max(len(data) - int(match.group(2)), 0)
            end = int(match.group(2)) if match.group(1) and match.group(2) else len(data) - 1
            end = min(end, len(data) - 1)
            if start >= len(data):
                headers["Content-Range"] = f"bytes */{len(data)}"
                return self._send(416, b"", headers, "application/octet-stream")
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            data, status = data[start : end + 1], 206
        headers["Content-Length"] = str(len(data))
        return self._send(status, data, headers, "application/octet-stream")


class HubServer:
    """A running stand-in Hub: ``url`` for ``HF_ENDPOINT``, ``state`` for its repositories and request log."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.state = HubState()
        handler = type("BoundHubRequestHandler", (HubRequestHandler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="test-hub", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def log(self) -> list[dict]:
        return self.state.log

    def start(self) -> HubServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
