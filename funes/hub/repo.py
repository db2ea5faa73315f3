"""A Hub dataset repo holding a memory: how it is named, and the few calls funes makes to it.

A remote memory is a dataset repo with the Lance table at ``chunks.lance/`` and a dataset
card at ``README.md``.  Users name it ``<org>/<repo>`` or ``hf://datasets/<org>/<repo>``.

The endpoint is read from ``HF_ENDPOINT`` on every call and passed to huggingface_hub
explicitly: the library reads it once, at import, which would pin a process (or a test
session) to whichever endpoint was set first.  Every failure of the transport becomes a
one-line :class:`~funes.errors.RemoteError` naming the repo and endpoint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funes.errors import FunesError, MemoryMissingError, RemoteError, UsageError
from funes.memory.schema import TABLE_NAME

DEFAULT_ENDPOINT = "https://huggingface.co"
URI_PREFIX = "hf://datasets/"
TABLE_DIR = f"{TABLE_NAME}.lance"
CARD_PATH = "README.md"
# Parallel whole-file downloads: enough to hide per-request latency, few enough to be polite.
DOWNLOAD_THREADS = 8
# Seconds the first call to a repo (its commit and file list) may take to connect or to
# answer: huggingface_hub sets no timeout on it, so a Hub that accepts and never answers
# would hold a command forever.  The API answers in well under a second when reachable.
API_TIMEOUT_S = 10.0

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REPO_ID = re.compile(rf"{_NAME}/{_NAME}")


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


@dataclass(frozen=True)
class HubRemote:
    """A dataset repo on one Hub endpoint."""

    repo_id: str
    endpoint: str

    @property
    def uri(self) -> str:
        return f"{URI_PREFIX}{self.repo_id}"

    @property
    def key(self) -> str:
        """A relative path naming this repo on this endpoint, for local state and caches."""
        host = re.sub(r"[^A-Za-z0-9.-]", "_", self.endpoint.split("://", 1)[-1])
        return f"{host}/{self.repo_id}"

    @property
    def cache_folder(self) -> str:
        """The repo's folder in the standard HF cache (its documented layout)."""
        return "datasets--" + self.repo_id.replace("/", "--")


def parse_remote(spec: str) -> HubRemote:
    """``org/repo`` or ``hf://datasets/org/repo`` on the current endpoint."""
    text = spec.strip()
    if text.startswith("hf://"):
        if not text.startswith(URI_PREFIX):
            raise UsageError(f"{spec}: a memory lives in a dataset repo, hf://datasets/<org>/<repo>")
        text = text[len(URI_PREFIX):]
    text = text.rstrip("/")
    if not _REPO_ID.fullmatch(text):
        raise UsageError(f"{spec!r} is not a Hub dataset repo: expected <org>/<repo> or hf://datasets/<org>/<repo>")
    return HubRemote(text, hub_endpoint())


@dataclass(frozen=True)
class RepoState:
    """One commit of the repo: its SHA and every file path in it."""

    sha: str
    files: frozenset[str]
    private: bool

    @property
    def has_table(self) -> bool:
        return any(path.startswith(f"{TABLE_DIR}/") for path in self.files)


class HeadMoved(FunesError):
    """A guarded commit found the branch moved since it was read (HTTP 412 or 409)."""


class HubRepo:
    """The calls funes makes to one dataset repo, with errors made one line."""

    def __init__(self, remote: HubRemote):
        from huggingface_hub import HfApi, get_token
        from huggingface_hub.utils import disable_progress_bars

        # stdout carries recall output; transfers stay quiet.
        disable_progress_bars()
        self.remote = remote
        self.token = get_token()
        self.api = HfApi(endpoint=remote.endpoint, token=self.token, library_name="funes")

    # ------------------------------------------------------------------ reads
    def state(self, revision: str = "main") -> RepoState | None:
        """The commit at ``revision`` (a branch, tag or SHA) with its file list; None when
        the repo or the revision does not exist (or the repo is private and this token
        cannot see it)."""
        from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

        try:
            with self._errors("read"):
                info = self.api.dataset_info(self.remote.repo_id, revision=revision, timeout=API_TIMEOUT_S)
        except RemoteError as exc:
            if isinstance(exc.__cause__, (RepositoryNotFoundError, RevisionNotFoundError)):
                return None
            raise
        return RepoState(sha=info.sha, files=frozenset(s.rfilename for s in info.siblings or ()),
                         private=bool(info.private))

    def require_state(self, revision: str = "main") -> RepoState:
        state = self.state(revision)
        if state is None:
            raise MemoryMissingError(
                f"no dataset repo {self.remote.repo_id} on {self.remote.endpoint}"
                " (or it is private: set HF_TOKEN to a token that can read it)"
            )
        return state

    def commit_count(self) -> int:
        """How many commits main's history holds."""
        with self._errors("list the commits of"):
            return sum(1 for _ in self.api.list_repo_commits(self.remote.repo_id, repo_type="dataset"))

    def tags(self) -> dict[str, str]:
        """The repo's tags: {name: commit}."""
        with self._errors("list the tags of"):
            refs = self.api.list_repo_refs(self.remote.repo_id, repo_type="dataset")
        return {tag.name: tag.target_commit for tag in refs.tags}

    def download(self, path: str, sha: str) -> Path:
        """One file of commit ``sha``, whole, through the HF cache (no request when cached)."""
        from huggingface_hub import hf_hub_download

        with self._errors(f"download {path}"):
            return Path(hf_hub_download(self.remote.repo_id, path, repo_type="dataset", revision=sha,
                                        endpoint=self.remote.endpoint, token=self.token))

    def download_all(self, paths: Sequence[str], sha: str) -> None:
        if not paths:
            return
        with ThreadPoolExecutor(min(DOWNLOAD_THREADS, len(paths))) as pool:
            list(pool.map(lambda path: self.download(path, sha), paths))

    # ------------------------------------------------------------------ writes
    def create(self) -> None:
        """Create the repo private; an existing repo keeps its visibility."""
        with self._errors("create"):
            self.api.create_repo(self.remote.repo_id, repo_type="dataset", private=True, exist_ok=True)

    def tag(self, name: str, commit: str, message: str, *, replace: bool = False) -> None:
        """Tag ``commit``; ``replace`` deletes an existing tag of that name first."""
        from huggingface_hub.errors import RevisionNotFoundError

        with self._errors(f"tag {name} in"):
            if replace:
                try:
                    self.api.delete_tag(self.remote.repo_id, tag=name, repo_type="dataset")
                except RevisionNotFoundError:
                    pass
            self.api.create_tag(self.remote.repo_id, tag=name, revision=commit, tag_message=message,
                                repo_type="dataset")

    def squash_history(self, message: str) -> None:
        """Replace main's history with one commit of its current tree (the Hub's
        super-squash): no earlier commit, nor the files only they held, stays reachable."""
        with self._errors("squash the history of"):
            self.api.super_squash_history(self.remote.repo_id, repo_type="dataset", commit_message=message)

    def commit(self, operations: Sequence[Any], *, parent: str, message: str, description: str = "") -> str:
        """One commit of ``operations`` on main, only if main is still at ``parent``;
        returns the new head.  Raises :class:`HeadMoved` when it moved."""
        from huggingface_hub.errors import HfHubHTTPError

        try:
            with self._errors("commit to"):
                info = self.api.create_commit(self.remote.repo_id, operations, repo_type="dataset",
                                              commit_message=message, commit_description=description or None,
                                              parent_commit=parent)
        except RemoteError as exc:
            cause = exc.__cause__
            if isinstance(cause, HfHubHTTPError) and _status(cause) in (409, 412):
                raise HeadMoved(f"{self.remote.uri} moved past {parent[:12]}") from cause
            raise
        return info.oid

    # ------------------------------------------------------------------ errors
    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        # The transport huggingface_hub 2.x is built on (httpx2, pinned with it in
        # constraints.txt): its connection, DNS, timeout and protocol errors reach us as
        # they are, since only HTTP statuses become HfHubHTTPError.
        from httpx2 import TransportError
        from huggingface_hub.errors import (
            HfHubHTTPError,
            LocalEntryNotFoundError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
        )

        where = f"{self.remote.repo_id} on {self.remote.endpoint}"
        try:
            yield
        except RepositoryNotFoundError as exc:
            raise RemoteError(f"cannot {action} {where}: no such dataset repo, or HF_TOKEN cannot see it") from exc
        except HfHubHTTPError as exc:
            status = _status(exc)
            if status in (401, 403):
                raise RemoteError(f"cannot {action} {where}: not allowed (HTTP {status}); check HF_TOKEN") from exc
            detail = " ".join((getattr(exc, "server_message", None) or "").split())
            raise RemoteError(f"cannot {action} {where}: HTTP {status}" + (f" ({detail})" if detail else "")) from exc
        except OfflineModeIsEnabled as exc:
            raise RemoteError(f"cannot {action} {where}: HF_HUB_OFFLINE is set") from exc
        except LocalEntryNotFoundError as exc:
            raise RemoteError(f"cannot {action} {where}: the Hub is unreachable and the file is not cached") from exc
        except TransportError as exc:
            raise RemoteError(f"cannot {action} {where}: the Hub cannot be reached"
                              f" ({type(exc).__name__}: {_first_line(exc)})") from exc
        except OSError as exc:
            raise RemoteError(f"cannot {action} {where}: {exc.strerror or exc}") from exc


def _status(error: Any) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
