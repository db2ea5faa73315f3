"""The loopback Hub's storage: each Hub repo a bare git repository driven through git
plumbing (tests/helpers/hub_server.py serves them), so commit SHAs, history and refs are
real git objects and a branch moves only by a compare-and-swap ``git update-ref``."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SHA_RE = re.compile(r"[0-9a-f]{40}")
ZERO_SHA = "0" * 40

# Git must not pick up the developer's or CI's config (signing, hooks, default branch).
GIT_CONFIG_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def hub_datetime(epoch_seconds: float) -> str:
    """The only datetime format `huggingface_hub.utils.parse_datetime` accepts."""
    millis = int(round(epoch_seconds * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"


@dataclass(frozen=True)
class TreeEntry:
    kind: str  # "file" or "directory", as the Hub's tree API names them
    mode: str
    oid: str
    size: int

    def as_json(self, path: str) -> dict:
        return {"type": self.kind, "oid": self.oid, "size": self.size, "path": path}


class GitRepo:
    """A bare git repository standing in for one Hub repo."""

    def __init__(self, git_dir: Path, author: str):
        self.git_dir = git_dir
        self._env = {**os.environ, **GIT_CONFIG_ENV, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author}@hub.test",
                     "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": f"{author}@hub.test"}
        self._trees: dict[str, dict[str, TreeEntry]] = {}

    def run(self, *args: str, input: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", f"--git-dir={self.git_dir}", *args],
            input=input,
            capture_output=True,
            env={**self._env, **(env or {})},
        )

    def git(self, *args: str, input: bytes | None = None, env: dict | None = None) -> bytes:
        result = self.run(*args, input=input, env=env)
        if result.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.decode(errors='replace')}")
        return result.stdout

    def init(self) -> None:
        self.git_dir.mkdir(parents=True)
        self.git("init", "--quiet", "--bare", "--initial-branch=main")

    def resolve(self, revision: str) -> str | None:
        """A commit SHA for a branch, tag, full ref or full SHA, as the Hub resolves revisions."""
        if revision.startswith("-"):
            return None
        if SHA_RE.fullmatch(revision) or revision.startswith("refs/"):
            candidates = [revision]
        else:
            candidates = [f"refs/heads/{revision}", f"refs/tags/{revision}"]
        for candidate in candidates:
            sha = self.run("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}").stdout.strip()
            if sha:
                return sha.decode()
        return None

    def tree(self, commit: str) -> dict[str, TreeEntry]:
        """Every path of a commit. Commits are immutable, so this is cached by SHA forever."""
        if commit not in self._trees:
            entries = {}
            for record in self.git("ls-tree", "-r", "-t", "-l", "-z", commit).split(b"\0"):
                if not record:
                    continue
                meta, path = record.decode().split("\t", 1)
                mode, kind, oid, size = meta.split()
                entries[path] = TreeEntry(
                    "directory" if kind == "tree" else "file", mode, oid, 0 if size == "-" else int(size)
                )
            self._trees[commit] = entries
        return self._trees[commit]

    def blob(self, oid: str) -> bytes:
        return self.git("cat-file", "blob", oid)

    def write_blob(self, content: bytes) -> str:
        return self.git("hash-object", "-w", "--stdin", input=content).decode().strip()

    def commit_files(self, files: dict[str, tuple[str, str]], parent: str | None, message: str) -> str:
        """Write a commit whose tree is exactly `files` ({path: (mode, blob oid)}); returns its SHA."""
        with tempfile.TemporaryDirectory() as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            index_info = b"".join(f"{mode} {oid}\t{path}".encode() + b"\0" for path, (mode, oid) in files.items())
            self.git("update-index", "-z", "--index-info", input=index_info, env=env)
            tree = self.git("write-tree", env=env).decode().strip()
        parents = ["-p", parent] if parent else []
        commit = self.git("commit-tree", "--no-gpg-sign", tree, *parents, "-F", "-", input=message.encode())
        return commit.decode().strip()

    def move_ref(self, ref: str, new: str, old: str | None) -> bool:
        """Compare-and-swap: moves `ref` to `new` only if it still points at `old` (None: must not exist)."""
        return self.run("update-ref", ref, new, old or ZERO_SHA).returncode == 0

    def refs(self) -> list[tuple[str, str]]:
        out = self.git("for-each-ref", "--format=%(refname)%00%(objectname)")
        return [tuple(line.split("\0")) for line in out.decode().splitlines() if line]

    def log(self, commit: str) -> list[dict]:
        out = self.git("log", "-z", "--format=%H%x1f%ct%x1f%an%x1f%B", commit).decode()
        commits = []
        for record in out.split("\0"):
            if not record:
                continue
            sha, timestamp, author, raw_message = record.split("\x1f", 3)
            title, _, message = raw_message.strip().partition("\n")
            commits.append(
                {
                    "id": sha,
                    "title": title,
                    "message": message.strip(),
                    "date": hub_datetime(int(timestamp)),
                    "authors": [{"user": author}],
                }
            )
        return commits

    def commit_time(self, commit: str) -> int:
        return int(self.git("show", "-s", "--format=%ct", commit).strip())
