"""A small Hugging Face Hub-compatible HTTP server for tests.

The Hub cannot be reached from the test machines, and no installable server supports the write
path (see shared/research/platform.md §1), so the tests drive the real `huggingface_hub` client
over real HTTP against this one. Each Hub repo is a bare git repository (tests/helpers/hub_git.py),
so commit SHAs, history and refs are real git objects, and a branch moves only by a
compare-and-swap `git update-ref <new> <old>`.

Scope: the routes `huggingface_hub` 2.4.0 uses to create/delete repos, read info, refs, trees and
commits, create/delete tags (any revision, a tag included, resolves as on the Hub), commit regular files (base64 in the NDJSON payload; preupload answers "regular" for every
file, so no LFS/Xet endpoint is needed) and download files. Every request is counted per route, so
tests can assert how many calls a read makes, and failures can be injected per route.

Any non-empty bearer token is accepted; private repos answer 401 RepoNotFound to anonymous calls,
as the Hub does.

Standalone: `python tests/helpers/hub_server.py --root /tmp/hub --port 8765`.
"""

from __future__ import annotations

import base64
import collections
import json
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from hub_git import GitRepo, hub_datetime

TEST_USER = "test-user"
# A dummy that cannot be mistaken for a real token by secret scanners or push protection.
TEST_TOKEN = "test-token"

REPO_TYPES = ("model", "dataset", "space")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

# A shortened copy of the .gitattributes the Hub seeds new repos with, so a fresh repo has one
# commit and one file, like on the Hub.
INITIAL_GITATTRIBUTES = b"""\
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
"""


class HubError(Exception):
    """An error answered to the client. `code` becomes X-Error-Code, which the client maps to
    its typed errors (RepoNotFound, RevisionNotFound, EntryNotFound)."""

    def __init__(self, status: int, message: str, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers or {}


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(data: object, status: int = 200) -> Response:
    return Response(status, json.dumps(data).encode(), {"Content-Type": "application/json"})


def error_response(error: HubError) -> Response:
    response = json_response({"error": error.message}, error.status)
    # Headers must stay on one latin-1 line, whatever the message holds.
    response.headers["X-Error-Message"] = " ".join(error.message.split()).encode("ascii", "replace").decode()
    if error.code:
        response.headers["X-Error-Code"] = error.code
    response.headers.update(error.headers)
    return response


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    git: GitRepo
    private: bool
    created_at: float
    # Serialises read-head → build → update-ref, so concurrent commits apply one after another.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, endpoint: str) -> str:
        prefix = "" if self.repo_type == "model" else f"{self.repo_type}s/"
        return f"{endpoint}/{prefix}{self.repo_id}"


@dataclass
class InjectedFailure:
    route: str
    status: int
    remaining: int
    message: str


REPO = r"(?P<type>models|datasets|spaces)/(?P<ns>[^/]+)/(?P<name>[^/]+)"
ROUTES: list[tuple[str, tuple[str, ...], re.Pattern]] = [
    (name, methods, re.compile(pattern))
    for name, methods, pattern in [
        ("whoami", ("GET",), r"/api/whoami-v2"),
        ("validate-yaml", ("POST",), r"/api/validate-yaml"),
        ("repo-create", ("POST",), r"/api/repos/create"),
        ("repo-delete", ("DELETE",), r"/api/repos/delete"),
        ("info", ("GET",), rf"/api/{REPO}(?:/revision/(?P<rev>[^/]+))?"),
        ("refs", ("GET",), rf"/api/{REPO}/refs"),
        ("tree", ("GET",), rf"/api/{REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?"),
        ("paths-info", ("POST",), rf"/api/{REPO}/paths-info/(?P<rev>[^/]+)"),
        ("commits", ("GET",), rf"/api/{REPO}/commits/(?P<rev>[^/]+)"),
        ("preupload", ("POST",), rf"/api/{REPO}/preupload/(?P<rev>[^/]+)"),
        ("commit", ("POST",), rf"/api/{REPO}/commit/(?P<rev>[^/]+)"),
        ("settings", ("PUT",), rf"/api/{REPO}/settings"),
        ("super-squash", ("POST",), rf"/api/{REPO}/super-squash/(?P<rev>[^/]+)"),
        ("tag-create", ("POST",), rf"/api/{REPO}/tag/(?P<rev>[^/]+)"),
        ("tag-delete", ("DELETE",), rf"/api/{REPO}/tag/(?P<tag>[^/]+)"),
        (
            "resolve",
            ("GET", "HEAD"),
            r"/(?:(?P<type>datasets|spaces)/)?(?P<ns>[^/]+)/(?P<name>[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)",
        ),
    ]
]


@dataclass
class Request:
    method: str
    params: dict[str, str]  # route captures, percent-decoded
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    @property
    def authenticated(self) -> bool:
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip())

    def flag(self, name: str) -> bool:
        return self.query.get(name, [""])[-1].lower() in ("1", "true")

    def json(self) -> dict:
        try:
            return json.loads(self.body or b"{}")
        except ValueError as error:
            raise HubError(400, f"Invalid JSON body: {error}") from error


class HubServer:
    """The server and its state. Use as a context manager, or call start()/stop().

    Tests read `endpoint`, `counts`/`request_count`/`requests` (since the last `reset_counts()`),
    `is_private()`, and inject failures with `fail_next()`.
    """

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0):
        self.root = Path(root)
        self.token = TEST_TOKEN
        self.user = TEST_USER
        self._repos: dict[tuple[str, str], Repo] = {}
        self._registry_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._counts: collections.Counter[str] = collections.Counter()
        self._requests: list[str] = []
        self._failures: list[InjectedFailure] = []
        self._http = ThreadingHTTPServer((host, port), _Handler)
        self._http.daemon_threads = True
        self._http.hub = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self.endpoint = f"http://{host}:{self._http.server_address[1]}"

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> "HubServer":
        self._thread = threading.Thread(
            # A short poll keeps shutdown() (the end of a test session) quick.
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name="hub-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # ----------------------------------------------------------------- test controls

    @property
    def counts(self) -> collections.Counter[str]:
        """Requests per "METHOD route" (e.g. "HEAD resolve", "POST commit"; "GET unrouted" for
        paths this server does not know) since the last reset."""
        with self._stats_lock:
            return collections.Counter(self._counts)

    @property
    def request_count(self) -> int:
        with self._stats_lock:
            return sum(self._counts.values())

    @property
    def requests(self) -> list[str]:
        """"METHOD /path?query" of every request since the last reset, to explain a count."""
        with self._stats_lock:
            return list(self._requests)

    def reset_counts(self) -> None:
        with self._stats_lock:
            self._counts.clear()
            self._requests.clear()

    def fail_next(self, route: str, status: int = 500, times: int = 1, message: str = "Injected failure") -> None:
        """Answer the next `times` requests to `route` (a name from ROUTES, e.g. "commit") with
        `status`, without doing anything else."""
        if route not in {name for name, _, _ in ROUTES}:
            raise ValueError(f"Unknown route {route!r}; routes: {[name for name, _, _ in ROUTES]}")
        with self._stats_lock:
            self._failures.append(InjectedFailure(route, status, times, message))

    def is_private(self, repo_id: str, repo_type: str = "model") -> bool:
        return self._get_repo(repo_type, repo_id).private

    def git_dir(self, repo_id: str, repo_type: str = "model") -> Path:
        return self._get_repo(repo_type, repo_id).git.git_dir

    # ----------------------------------------------------------------- dispatch

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Response:
        url = urlsplit(raw_path)
        route, params = "unrouted", {}
        for name, methods, pattern in ROUTES:
            match = pattern.fullmatch(url.path)
            if match and method in methods:
                route = name
                # Revisions and paths arrive percent-encoded ("refs%2Fpr%2F1", "a%2Fb"): decode
                # after matching so an encoded "/" never splits a segment.
                params = {key: unquote(value) for key, value in match.groupdict().items() if value is not None}
                break
        with self._stats_lock:
            self._counts[f"{method} {route}"] += 1
            self._requests.append(f"{method} {raw_path}")
            failure = next((f for f in self._failures if f.route == route and f.remaining > 0), None)
            if failure is not None:
                failure.remaining -= 1
        try:
            if failure is not None:
                raise HubError(failure.status, failure.message)
            if route == "unrouted":
                raise HubError(404, f"The test hub has no route for {method} {url.path}")
            request = Request(method, params, parse_qs(url.query), headers, body)
            return getattr(self, "_route_" + route.replace("-", "_"))(request)
        except HubError as error:
            return error_response(error)
        except Exception as error:
            # A server bug: answer it, since a dropped connection would only show up as client retries.
            return error_response(HubError(500, f"Test hub error: {error!r}"))

    def _get_repo(self, repo_type: str, repo_id: str) -> Repo:
        with self._registry_lock:
            repo = self._repos.get((repo_type, repo_id))
        if repo is None:
            raise HubError(404, f"Repository {repo_id} not found", "RepoNotFound")
        return repo

    def _repo_for(self, request: Request, write: bool = False) -> Repo:
        if write and not request.authenticated:
            raise HubError(401, "Invalid credentials in Authorization header")
        repo_type = request.params.get("type", "models").removesuffix("s")
        repo = self._get_repo(repo_type, f"{request.params['ns']}/{request.params['name']}")
        if repo.private and not request.authenticated:
            # The Hub hides private repos from anonymous callers behind a 401 RepoNotFound.
            raise HubError(401, f"Repository {repo.repo_id} not found", "RepoNotFound")
        return repo

    @staticmethod
    def _commit_for(repo: Repo, revision: str) -> str:
        commit = repo.git.resolve(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    # ----------------------------------------------------------------- account

    def _route_whoami(self, request: Request) -> Response:
        if not request.authenticated:
            raise HubError(401, "Invalid credentials in Authorization header")
        return json_response(
            {
                "type": "user",
                "name": self.user,
                "fullname": "Test User",
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "test", "role": "write"}},
            }
        )

    def _route_validate_yaml(self, request: Request) -> Response:
        return json_response({"errors": [], "warnings": []})

    # ----------------------------------------------------------------- repos

    def _route_repo_create(self, request: Request) -> Response:
        if not request.authenticated:
            raise HubError(401, "Invalid credentials in Authorization header")
        payload = request.json()
        repo_type = payload.get("type") or "model"
        namespace, name = payload.get("organization") or self.user, payload.get("name", "")
        if repo_type not in REPO_TYPES or not NAME_RE.fullmatch(namespace) or not NAME_RE.fullmatch(name):
            raise HubError(400, f"Invalid repo: type={repo_type!r} name={namespace}/{name}")
        # Clients before 1.x send `private`; current ones send `visibility`. The Hub's default is public.
        private = payload.get("visibility") == "private" or payload.get("private") is True
        repo_id = f"{namespace}/{name}"
        git = GitRepo(self.root / f"{repo_type}s" / namespace / f"{name}.git", TEST_USER)
        with self._registry_lock:
            existing = self._repos.get((repo_type, repo_id))
            if existing is not None:
                return json_response(
                    {"error": f"You already created this {repo_type} repo", "url": existing.url(self.endpoint)}, 409
                )
            repo = Repo(repo_type, repo_id, git, private, time.time())
            git.init()
            initial = git.commit_files(
                {".gitattributes": ("100644", git.write_blob(INITIAL_GITATTRIBUTES))}, None, "initial commit"
            )
            git.move_ref("refs/heads/main", initial, None)
            self._repos[(repo_type, repo_id)] = repo
        return json_response({"url": repo.url(self.endpoint), "name": repo_id, "id": repo_id})

    def _route_repo_delete(self, request: Request) -> Response:
        if not request.authenticated:
            raise HubError(401, "Invalid credentials in Authorization header")
        payload = request.json()
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or self.user}/{payload.get('name', '')}"
        with self._registry_lock:
            repo = self._repos.pop((repo_type, repo_id), None)
        if repo is None:
            raise HubError(404, f"Repository {repo_id} not found", "RepoNotFound")
        shutil.rmtree(repo.git.git_dir)
        return Response(200)

    def _route_super_squash(self, request: Request) -> Response:
        """The branch becomes one parentless commit of its tree; what only older commits
        held is pruned from the object store, as the Hub's squash frees it."""
        repo = self._repo_for(request, write=True)
        branch = request.params["rev"]
        ref = branch if branch.startswith("refs/heads/") else f"refs/heads/{branch}"
        message = (request.json() or {}).get("message") or "Super-squash"
        with repo.lock:
            head = repo.git.resolve(ref)
            if head is None:
                raise HubError(404, f"Invalid rev id: {branch} is not a branch", "RevisionNotFound")
            files = {path: (e.mode, e.oid) for path, e in repo.git.tree(head).items() if e.kind == "file"}
            squashed = repo.git.commit_files(files, None, message)
            if not repo.git.move_ref(ref, squashed, head):
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
            repo.git.git("reflog", "expire", "--expire=now", "--all")
            repo.git.git("gc", "--quiet", "--prune=now")
        return json_response({"commitId": squashed})

    def _route_tag_create(self, request: Request) -> Response:
        """A lightweight tag on the commit a revision names; 409 when the tag exists, as
        on the Hub (moving a tag is a delete, then a create)."""
        repo = self._repo_for(request, write=True)
        tag = (request.json() or {}).get("tag") or ""
        if not tag or tag.startswith("-") or repo.git.run("check-ref-format", f"refs/tags/{tag}").returncode:
            raise HubError(400, f"Invalid tag name: {tag!r}")
        with repo.lock:
            commit = self._commit_for(repo, request.params["rev"])
            if not repo.git.move_ref(f"refs/tags/{tag}", commit, None):
                raise HubError(409, f"Tag {tag} already exists")
        return json_response({})

    def _route_tag_delete(self, request: Request) -> Response:
        repo = self._repo_for(request, write=True)
        tag = request.params["tag"]
        with repo.lock:
            target = repo.git.resolve(f"refs/tags/{tag}")
            if target is None or repo.git.run("update-ref", "-d", f"refs/tags/{tag}", target).returncode:
                raise HubError(404, f"Invalid rev id: {tag} is not a tag", "RevisionNotFound")
        return json_response({})

    def _route_settings(self, request: Request) -> Response:
        repo = self._repo_for(request, write=True)
        payload = request.json()
        if "visibility" in payload:
            repo.private = payload["visibility"] == "private"
        elif "private" in payload:
            repo.private = bool(payload["private"])
        return json_response({})

    def _route_info(self, request: Request) -> Response:
        repo = self._repo_for(request)
        commit = self._commit_for(repo, request.params.get("rev", "main"))
        tree = repo.git.tree(commit)
        with_blobs = request.flag("blobs")
        siblings = []
        for path, entry in tree.items():
            if entry.kind == "file":
                blob = {"size": entry.size, "blobId": entry.oid} if with_blobs else {}
                siblings.append({"rfilename": path, **blob})
        namespace = repo.repo_id.split("/")[0]
        return json_response(
            {
                "id": repo.repo_id,
                "author": namespace,
                "sha": commit,
                "private": repo.private,
                "gated": False,
                "disabled": False,
                "createdAt": hub_datetime(repo.created_at),
                "lastModified": hub_datetime(repo.git.commit_time(commit)),
                "tags": [],
                "downloads": 0,
                "likes": 0,
                "siblings": siblings,
            }
        )

    def _route_refs(self, request: Request) -> Response:
        repo = self._repo_for(request)
        groups: dict[str, list[dict]] = {"branches": [], "tags": [], "converts": [], "pullRequests": []}
        prefixes = {
            "refs/heads/": "branches",
            "refs/tags/": "tags",
            "refs/convert/": "converts",
            "refs/pr/": "pullRequests",
        }
        for ref, target in repo.git.refs():
            for prefix, group in prefixes.items():
                if ref.startswith(prefix):
                    groups[group].append({"name": ref.removeprefix(prefix), "ref": ref, "targetCommit": target})
        if not request.flag("include_prs"):
            del groups["pullRequests"]
        return json_response(groups)

    def _route_commits(self, request: Request) -> Response:
        repo = self._repo_for(request)
        return json_response(repo.git.log(self._commit_for(repo, request.params["rev"])))

    # ----------------------------------------------------------------- trees

    def _route_tree(self, request: Request) -> Response:
        repo = self._repo_for(request)
        commit = self._commit_for(repo, request.params["rev"])
        tree = repo.git.tree(commit)
        folder = request.params.get("path", "").strip("/")
        if folder and (folder not in tree or tree[folder].kind != "directory"):
            raise HubError(404, f"Entry not found: {folder}", "EntryNotFound", {"X-Repo-Commit": commit})
        prefix = f"{folder}/" if folder else ""
        recursive = request.flag("recursive")
        entries = [
            entry.as_json(path)
            for path, entry in tree.items()
            if path.startswith(prefix) and (recursive or "/" not in path[len(prefix) :])
        ]
        return json_response(entries)

    def _route_paths_info(self, request: Request) -> Response:
        repo = self._repo_for(request)
        commit = self._commit_for(repo, request.params["rev"])
        tree = repo.git.tree(commit)
        if request.headers.get("content-type", "").startswith("application/json"):
            paths = request.json().get("paths", [])
        else:
            paths = parse_qs(request.body.decode()).get("paths", [])
        # Missing paths are left out, not an error (documented client behaviour).
        return json_response([tree[p.strip("/")].as_json(p.strip("/")) for p in paths if p.strip("/") in tree])

    # ----------------------------------------------------------------- writes

    def _route_preupload(self, request: Request) -> Response:
        repo = self._repo_for(request, write=True)
        tree = repo.git.tree(self._commit_for(repo, request.params["rev"]))
        files = []
        for file in request.json().get("files", []):
            existing = tree.get(file["path"])
            files.append(
                {
                    "path": file["path"],
                    # Every file travels base64 inside the commit payload: no LFS/Xet server needed.
                    "uploadMode": "regular",
                    "shouldIgnore": False,
                    # The current blob oid lets the client skip files that did not change.
                    "oid": existing.oid if existing is not None and existing.kind == "file" else None,
                }
            )
        return json_response({"files": files})

    def _route_commit(self, request: Request) -> Response:
        repo = self._repo_for(request, write=True)
        if request.flag("create_pr"):
            raise HubError(400, "The test hub does not support pull requests")
        branch = request.params["rev"]
        ref = branch if branch.startswith("refs/heads/") else f"refs/heads/{branch}"
        header, operations = self._parse_commit_payload(request.body)
        # Content-addressed, so blobs can be written before taking the lock.
        blobs = {op["path"]: repo.git.write_blob(op["content"]) for op in operations if op["key"] == "file"}
        with repo.lock:
            head = repo.git.resolve(ref)
            if head is None:
                raise HubError(404, f"Invalid rev id: {branch} is not a branch", "RevisionNotFound")
            parent = header.get("parentCommit")
            if parent is not None and parent != head:
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
            files = {path: (e.mode, e.oid) for path, e in repo.git.tree(head).items() if e.kind == "file"}
            for op in operations:
                path = op["path"]
                if op["key"] == "file":
                    files[path] = (files.get(path, ("100644",))[0], blobs[path])
                elif op["key"] == "deletedFile":
                    if files.pop(path, None) is None:
                        raise HubError(404, f"File not found: {path}", "EntryNotFound")
                else:
                    doomed = [p for p in files if p.startswith(path.rstrip("/") + "/")]
                    if not doomed:
                        raise HubError(404, f"Folder not found: {path}", "EntryNotFound")
                    for p in doomed:
                        del files[p]
            folders = {path[:i] for path in files for i, char in enumerate(path) if char == "/"}
            if clashes := sorted(folders & files.keys()):
                # git would silently drop one side; the Hub refuses a path that is both file and folder.
                raise HubError(400, f"Paths used both as a file and as a folder: {clashes}")
            message = header.get("summary") or "Commit"
            if header.get("description"):
                message += "\n\n" + header["description"]
            commit = repo.git.commit_files(files, head, message)
            if not repo.git.move_ref(ref, commit, head):
                # Only reachable if something outside this server moved the branch.
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
        return json_response(
            {
                "success": True,
                "commitOid": commit,
                "commitUrl": f"{repo.url(self.endpoint)}/commit/{commit}",
                "hookOutput": "",
                "pullRequestUrl": None,
            }
        )

    @staticmethod
    def _parse_commit_payload(body: bytes) -> tuple[dict, list[dict]]:
        header: dict = {}
        operations: list[dict] = []
        for line in body.splitlines():
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as error:
                raise HubError(400, f"Invalid NDJSON line: {error}") from error
            key, value = item.get("key"), item.get("value", {})
            if key == "header":
                header = value
            elif key == "file":
                path = value["path"].strip("/")
                raw = value.get("content", "")
                content = base64.b64decode(raw) if value.get("encoding") == "base64" else raw.encode()
                operations.append({"key": key, "path": path, "content": content})
            elif key in ("deletedFile", "deletedFolder"):
                operations.append({"key": key, "path": value["path"].strip("/")})
            elif key == "lfsFile":
                raise HubError(400, f"The test hub stores regular files only; got an LFS file {value.get('path')}")
            else:
                raise HubError(400, f"Unknown commit operation {key!r}")
        return header, operations

    # ----------------------------------------------------------------- downloads

    def _route_resolve(self, request: Request) -> Response:
        repo = self._repo_for(request)
        commit = self._commit_for(repo, request.params["rev"])
        path = request.params["path"]
        entry = repo.git.tree(commit).get(path)
        if entry is None or entry.kind != "file":
            # X-Repo-Commit lets the client cache the file's absence for this commit.
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": commit})
        headers = {
            "X-Repo-Commit": commit,
            "ETag": f'"{entry.oid}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if request.method == "HEAD":
            return Response(200, b"", {**headers, "Content-Length": str(entry.size)})
        content = repo.git.blob(entry.oid)
        byte_range = parse_range(request.headers.get("range"), len(content))
        if byte_range is None:
            return Response(200, content, headers)
        start, end = byte_range
        if start >= len(content) or start > end:
            raise HubError(416, "Range Not Satisfiable", headers={"Content-Range": f"bytes */{len(content)}"})
        headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
        return Response(206, content[start : end + 1], headers)


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a single `bytes=` range, clamped to the content; None serves it all
    (no header, or a multi-range this server ignores, as RFC 9110 allows)."""
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", (header or "").strip())
    if match is None or match.groups() == ("", ""):
        return None
    first, last = match.groups()
    if first == "":
        return max(size - int(last), 0), size - 1
    return int(first), min(int(last), size - 1) if last else size - 1


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the client's connections alive across requests, as with the real Hub.
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, the body then waits for the
    # client's delayed ACK (~40 ms a request).
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        body = self._read_body()
        hub: HubServer = self.server.hub  # type: ignore[attr-defined]
        response = hub.handle(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if "Content-Length" not in response.headers:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_HEAD = do_POST = do_PUT = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
            # Skip trailers up to the blank line that ends the message.
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def log_message(self, format: str, *args) -> None:
        """Silent: the request log lives in HubServer.requests."""


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="folder for the bare git repos")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with HubServer(args.root, args.host, args.port) as server:
        print(f"HF_ENDPOINT={server.endpoint}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
