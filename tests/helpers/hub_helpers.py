"""What the Hub-tier tests share: running the CLI, writing transcripts and memories,
and reading back everything a test Hub repo ever received."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

FUNES = [sys.executable, "-m", "funes.cli"]


def funes(*args: str, env: dict | None = None, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess (stdin is not a terminal: nobody can be asked)."""
    return subprocess.run([*FUNES, *args], capture_output=True, text=True, timeout=timeout,
                          env=env or os.environ.copy(), stdin=subprocess.DEVNULL, **kwargs)


def env_with(**variables: str) -> dict[str, str]:
    return {**os.environ, **variables}


# --------------------------------------------------------------------------- transcripts


def write_claude_session(path: Path, session_id: str, texts: Sequence[str], *, cwd: str = "/work/app",
                         start_minute: int = 0) -> Path:
    """A Claude Code transcript whose turns alternate user and assistant, one text each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines, parent = [], None
    for number, text in enumerate(texts):
        turn_uuid = f"{session_id[:8]}-0000-4000-8000-{start_minute + number:012d}"
        role = "user" if number % 2 == 0 else "assistant"
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append({"type": role, "uuid": turn_uuid, "parentUuid": parent, "sessionId": session_id, "cwd": cwd,
                      "timestamp": f"2026-05-01T10:{(start_minute + number) // 60:02d}:{(start_minute + number) % 60:02d}.000Z",
                      "message": {"role": role, "content": content}})
        parent = turn_uuid
    with path.open("a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
    return path


def index_into_local_memory(paths: Iterable[Path]) -> None:
    """Index transcripts into $FUNES_HOME's memory with vectors, as `funes index --yes` does."""
    from funes.discovery import discover
    from funes.embedding import IDENTITY, load_embedder
    from funes.indexing import embed_backlog, index_units
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        units = [unit for path in paths for unit in discover(path)]
        report = index_units(writer, units)
        assert not report.errors, report.errors
        embed_backlog(writer, load_embedder("cpu"))


def write_memory(chunks: Sequence, *, identity: dict[str, str] | None = None) -> None:
    """Store ``chunks`` (funes.chunking.Chunk) in $FUNES_HOME's memory with random unit
    vectors: for tests about what ships, not about what is found."""
    from funes.embedding import IDENTITY
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(chunks), IDENTITY.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    metadata = identity or IDENTITY.to_metadata()
    with MemoryWriter.open(local_memory(), metadata, dim=IDENTITY.dim, allow_other_model=True) as writer:
        writer.add_chunks(chunks, vectors)


def chunk(session_id: str, turn: int, text: str, *, repo: str | None = None, block_idx: int = 0,
          split_idx: int = 0, char_start: int = 0, **fields) -> object:
    from funes.chunking import Chunk, chunk_id

    turn_uuid = f"turn-{turn:04d}"
    values = dict(id=chunk_id(session_id, turn_uuid, block_idx, split_idx), text=text, harness="claude_code",
                  session_id=session_id, turn_uuid=turn_uuid, parent_uuid=None, seq=turn,
                  ts=f"2026-05-01T10:00:{turn % 60:02d}.000Z", role="user" if turn % 2 == 0 else "assistant",
                  block_type="text", tool_name=None, block_idx=block_idx, split_idx=split_idx,
                  char_start=char_start, tier=1, workdir="-work-app", cwd="/work/app", repo=repo, branch="main",
                  source_path="/work/app/session.jsonl", parent_session_id=None, is_subagent=False)
    values.update(fields)
    return Chunk(**values)


DEPLOY_OUTPUT = "deployed build 4711 to staging in 38 s"


def deploy_with_token(session_id: str, token: str) -> list:
    """A request, the Bash call that ran a deploy with ``token`` on its command line,
    and that call's clean output (:data:`DEPLOY_OUTPUT`): a result whose call holds a secret."""
    import json

    return [chunk(session_id, 1, "Ship the build to staging."),
            chunk(session_id, 2, json.dumps({"command": f"deploy --token {token} --env staging"}),
                  block_type="tool_use", tool_name="Bash", tier=2),
            chunk(session_id, 3, DEPLOY_OUTPUT, block_type="tool_result", tool_name="Bash", tier=3)]


def local_ids(funes_home: Path) -> set[str]:
    import lance

    return set(lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(columns=["id"])
               .column("id").to_pylist())


# --------------------------------------------------------------------------- the test Hub's repos


def remote_status(*flags: str) -> dict:
    """The one remote `funes status --json` reports."""
    result = funes("status", "--json", *flags)
    assert result.returncode == 0, result.stderr
    [remote] = json.loads(result.stdout)["remotes"]
    return remote


def git(hub_server, repo_id: str, *args: str) -> str:
    git_dir = hub_server.git_dir(repo_id, "dataset")
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True,
                          check=True).stdout


def commits(hub_server, repo_id: str) -> list[str]:
    """Commit SHAs on main, newest first."""
    return git(hub_server, repo_id, "rev-list", "main").split()


def changed_files(hub_server, repo_id: str, commit: str) -> dict[str, str]:
    """{path: status letter} of ``commit`` against its parent."""
    out = git(hub_server, repo_id, "diff", "--name-status", f"{commit}^", commit)
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines()}


def remote_ids(hub_server, repo_id: str) -> set[str]:
    """Chunk ids of the table at the head commit, read from a checkout of the git repo."""
    return {row["id"] for row in remote_rows(hub_server, repo_id, ["id"])}


def remote_rows(hub_server, repo_id: str, columns: list[str]) -> list[dict]:
    """``columns`` of every row of the table at the head commit, read from a checkout of the git repo."""
    import lance

    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(["git", f"--git-dir={hub_server.git_dir(repo_id, 'dataset')}", "archive", "main"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        return lance.dataset(f"{folder}/chunks.lance").to_table(columns=columns).to_pylist()


def head_text(hub_server, repo_id: str) -> str:
    """Every file at the head commit of main, as text (see :func:`readable_text`)."""
    listing = git(hub_server, repo_id, "ls-tree", "-r", "main")
    git_dir = hub_server.git_dir(repo_id, "dataset")
    blobs = [subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", line.split()[2]],
                            capture_output=True, check=True).stdout for line in listing.splitlines()]
    return readable_text(blobs)


def everything_published(hub_server, repo_id: str) -> str:
    """Every blob the repo ever received, as text (see :func:`readable_text`)."""
    git_dir = hub_server.git_dir(repo_id, "dataset")
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch-all-objects", "--batch-check"],
                             capture_output=True, text=True, check=True).stdout
    blobs = []
    for line in listing.splitlines():
        oid, kind, _ = line.split()
        if kind == "blob":
            blobs.append(subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", oid],
                                        capture_output=True, check=True).stdout)
    return readable_text(blobs)


def everything_stored(folder: Path) -> str:
    """Every file under ``folder`` (a memory: table versions, data files, BM25 segments,
    coverage), as text (see :func:`readable_text`)."""
    return readable_text(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def bm25_vocabulary(folder: Path) -> set[str]:
    """Every word of every BM25 segment under ``folder`` (a memory's ``bm25``, or a
    reader's in the Hub cache), each segment read as a recall reads it."""
    from funes.memory.segments import Segment

    return {word for segment in folder.iterdir() if segment.is_dir() for word in Segment.load(segment).vocab}


def readable_text(blobs: Iterable[bytes]) -> str:
    """Files as text: each one's raw bytes, and for a Lance data file also the values of
    every column it holds, decoded (its strings are compressed on disk, so the raw
    bytes alone would hide a secret as well as they hide everything else)."""
    import lance.file

    parts = []
    with tempfile.TemporaryDirectory() as folder:
        for number, data in enumerate(blobs):
            parts.append(data.decode("utf-8", "replace"))
            if data.endswith(b"LANC"):
                path = Path(folder) / f"{number}.lance"
                path.write_bytes(data)
                try:
                    table = lance.file.LanceFileReader(str(path)).read_all().to_table()
                except Exception:  # noqa: BLE001 - an index file: no rows of text
                    continue
                parts += [str(value) for column in table.columns for value in column.to_pylist()]
    return "\n".join(parts)


def secret_transcript(path: Path, secrets: Sequence, *, clean_turns: int) -> Path:
    """A transcript asking for, then showing, each fake secret's context; then clean notes."""
    texts = []
    for secret in secrets:
        texts += [f"What does the {secret.kind} output say?", f"Here it is:\n{secret.context_text}"]
    texts += [f"A clean note about the build pipeline, number {n}." for n in range(clean_turns)]
    return write_claude_session(path, "5ec2e75e-0000-4000-8000-000000000001", texts)


@contextmanager
def unredacted_indexing() -> Iterator[None]:
    """Index as if the scanner had missed everything (an older funes, another tool)."""
    from funes import chunking
    from funes.redaction import Redaction

    redact_many = chunking.redact_many
    chunking.redact_many = lambda texts: [Redaction(text) for text in texts]
    try:
        yield
    finally:
        chunking.redact_many = redact_many


@contextmanager
def unscanned_egress() -> Iterator[None]:
    """Push as if the egress gate's rules had missed everything (a secret no rule knew
    when it was published)."""
    from funes.hub import gate
    from funes.redaction import EgressReport

    scan = gate.scan_for_egress
    gate.scan_for_egress = lambda texts: EgressReport(len(list(texts)), {}, {})
    try:
        yield
    finally:
        gate.scan_for_egress = scan


def assert_no_secret_published(hub_server, repo_id: str, secrets: Sequence) -> None:
    assert_no_secret_in(everything_published(hub_server, repo_id), secrets)


def assert_no_secret_in(text: str, secrets: Sequence) -> None:
    """No secret in ``text`` (from :func:`readable_text`) in any spelling a transcript may hold."""
    assert "clean note about the build pipeline" in text  # the files were read
    for secret in secrets:
        for value in secret.values:
            assert not any(form in text for form in secret_forms(value)), secret.kind


def secret_forms(value: str) -> set[str]:
    """A secret raw and JSON-escaped once and twice, as a transcript may hold it."""
    forms, level = {value}, {value}
    for _ in range(2):
        level = {json.dumps(form)[1:-1] for form in level}
        forms |= level
    return forms


def run_cli(*args: str) -> int:
    """The CLI in this process (fast: libraries and the scanner stay loaded); its exit
    code.  Read its output with capsys."""
    from funes.cli.main import run

    try:
        run(list(args))
    except SystemExit as exit:
        return int(exit.code or 0)
    return 0
