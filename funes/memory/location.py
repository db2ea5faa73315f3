"""Where a memory lives: a local folder or an object-store prefix.

A memory is a folder (or prefix) holding the Lance table ``chunks.lance``.  Local
memories keep their derived state beside the table (the BM25 segments, coverage
of the transcripts, the writer lock); memories on object storage keep it in a
local folder keyed by their URI, since the lexical index is rebuilt from the rows
and coverage is per machine anyway.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from funes.config import funes_home, memory_dir
from funes.errors import UsageError, shown
from funes.memory.schema import TABLE_NAME

OBJECT_STORE_SCHEMES = ("s3://", "gs://", "az://", "abfs://")
# How commands name the default memory, the one they open without ``--memory``.
LOCAL_LABEL = "local"
# Seconds to establish a connection to an object store (Lance's default is 5 s, and it
# lists a table's versions up to ~6 times with 4 tries each, so a store that drops
# packets held a command for two minutes; 2 s is still ample for a handshake anywhere).
CONNECT_TIMEOUT = "2s"


@dataclass(frozen=True)
class MemoryLocation:
    uri: str  # a local folder or an object-store prefix holding chunks.lance
    label: str  # how commands name it to the user (`--memory <label>`)
    storage_options: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri

    @property
    def table_uri(self) -> str:
        return f"{self.uri.rstrip('/')}/{TABLE_NAME}.lance"

    @property
    def state_dir(self) -> Path:
        """Writer-side state: lexical index, coverage, lock."""
        if self.is_local:
            return Path(self.uri)
        digest = hashlib.sha1(self.uri.encode()).hexdigest()[:16]
        return funes_home() / "state" / "memories" / digest

    @property
    def lexical_dir(self) -> Path:
        return self.state_dir / "bm25"

    @property
    def coverage_path(self) -> Path:
        return self.state_dir / "coverage.sqlite"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "write.lock"


def local_memory() -> MemoryLocation:
    return MemoryLocation(uri=str(memory_dir()), label=LOCAL_LABEL)


def object_store_options(uri: str) -> dict[str, str]:
    """Storage options for Lance from the environment (endpoint and credentials of
    S3-compatible stores such as MinIO or moto, which the AWS SDK does not read)."""
    options: dict[str, str] = {"connect_timeout": CONNECT_TIMEOUT}
    if uri.startswith("s3://"):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            options["aws_endpoint"] = endpoint
            if endpoint.startswith("http://"):
                options["allow_http"] = "true"
        for env, key in (("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
                         ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
                         ("AWS_SESSION_TOKEN", "aws_session_token"),
                         ("AWS_REGION", "aws_region"), ("AWS_DEFAULT_REGION", "aws_region")):
            if os.environ.get(env) and key not in options:
                options[key] = os.environ[env]
    return options


def check_spec(spec: str) -> None:
    """A usage error for a memory spec that names nothing: empty, blank, or holding a
    control character (a folder named so would be made in the current directory, and
    Lance refuses the path)."""
    if not spec.strip() or any(unicodedata.category(ch) == "Cc" for ch in spec):
        raise UsageError(f"--memory {shown(spec)}: expected local, a folder, org/repo, hf://datasets/…"
                         " or s3://…")
    if "\\" in spec and not spec.startswith(OBJECT_STORE_SCHEMES):  # lancedb splits paths there too
        raise UsageError(f"--memory {shown(spec)}: a memory folder's path cannot hold a backslash")


def location_for(spec: str | None) -> MemoryLocation:
    """``local`` (or nothing), a folder path, or an object-store URI.  Hub memories
    (``org/repo``, ``hf://datasets/…``) are resolved by :mod:`funes.hub` into a
    local snapshot folder first."""
    if spec is None or spec == LOCAL_LABEL:
        return local_memory()
    check_spec(spec)
    if spec.startswith(OBJECT_STORE_SCHEMES):
        return MemoryLocation(uri=spec.rstrip("/"), label=spec, storage_options=object_store_options(spec))
    try:
        path = Path(spec).expanduser()
    except RuntimeError as exc:  # ~user with no such user
        raise UsageError(f"--memory {shown(spec)}: {exc}") from None
    if path.name == f"{TABLE_NAME}.lance":
        path = path.parent
    return MemoryLocation(uri=str(path.resolve()), label=spec)


def looks_like_repo_id(spec: str) -> bool:
    """Whether a memory spec names a Hub repo, ``org/repo`` (not a relative path
    that exists, not a URI)."""
    if "://" in spec or spec.startswith((".", "/", "~")) or spec.count("/") != 1:
        return False
    return not Path(spec).exists()
