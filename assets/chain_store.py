"""The values the index chain hands from stage to stage, stored on the memory's
own storage so that another process — a multiprocess step, a Celery worker on
another machine — can read them.

One object per asset and session partition, ``<memory>/pipeline/<asset>/<key>.pickle``
(a local folder, or the same ``s3://`` prefix as the memory, through
``pyarrow.fs``).  A run of many partitions stores and loads one object per
partition, so any subset of a run's partitions can be loaded again.  The values
are transient: ``memory_chunks`` discards a session's once its rows are
committed, since the parsed turns are not yet redacted (they are as sensitive as
the transcripts themselves, and are kept no longer than the run needs them).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import dagster as dg

from funes.memory.location import MemoryLocation, location_for

FOLDER = "pipeline"
# The assets whose values the chain store holds (memory_chunks discards them once stored).
CHAIN_VALUES = ("session_turns", "redacted_chunks", "chunk_embeddings")


def _filesystem(location: MemoryLocation) -> tuple[Any, str]:
    """(pyarrow filesystem, base path) of the chain store beside ``location``."""
    import pyarrow.fs as pafs

    if location.is_local:
        return pafs.LocalFileSystem(), f"{location.uri.rstrip('/')}/{FOLDER}"
    if location.uri.startswith("s3://"):
        options = location.storage_options
        endpoint = options.get("aws_endpoint")
        scheme = None
        if endpoint and "://" in endpoint:
            scheme, endpoint = endpoint.split("://", 1)
        filesystem = pafs.S3FileSystem(
            access_key=options.get("aws_access_key_id"), secret_key=options.get("aws_secret_access_key"),
            session_token=options.get("aws_session_token"), region=options.get("aws_region"),
            endpoint_override=endpoint, scheme=scheme)
        return filesystem, f"{location.uri.removeprefix('s3://').rstrip('/')}/{FOLDER}"
    raise dg.DagsterInvariantViolationError(
        f"the index chain stores its intermediate values beside the memory, on a local folder or s3:// "
        f"(the schemes tested); {location.label} is neither")


class ChainStore:
    """Per-partition pickles under the chain store folder of a memory."""

    def __init__(self, location: MemoryLocation):
        self.filesystem, self.base = _filesystem(location)

    def path(self, asset: str, key: str) -> str:
        return f"{self.base}/{asset}/{quote(key, safe='')}.pickle"

    def put(self, asset: str, values: Mapping[str, Any]) -> None:
        if not values:
            return
        self.filesystem.create_dir(f"{self.base}/{asset}", recursive=True)
        for key, value in values.items():
            with self.filesystem.open_output_stream(self.path(asset, key)) as stream:
                stream.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def get(self, asset: str, keys: Iterable[str]) -> dict[str, Any]:
        values = {}
        for key in keys:
            try:
                with self.filesystem.open_input_stream(self.path(asset, key)) as stream:
                    values[key] = pickle.loads(stream.read())  # noqa: S301 - written by this store only
            except FileNotFoundError as exc:
                raise dg.Failure(f"{asset} holds no value for partition {key} in {self.base}: materialize "
                                 f"the index chain for it (session_turns onwards) again") from exc
        return values

    def discard(self, assets: Iterable[str], keys: Iterable[str]) -> None:
        import pyarrow.fs as pafs

        keys = list(keys)
        for asset in assets:
            for key in keys:
                path = self.path(asset, key)
                if self.filesystem.get_file_info(path).type != pafs.FileType.NotFound:
                    self.filesystem.delete_file(path)


class ChainIOManager(dg.ConfigurableIOManager):
    """Chain values per session partition on the memory's storage (see the module
    docstring); ``memory`` as :class:`funes.assets.resources.MemoryResource`."""

    memory: str = "local"

    def store(self) -> ChainStore:
        return ChainStore(location_for(self.memory))

    def handle_output(self, context: dg.OutputContext, obj: Mapping[str, Any] | None) -> None:
        if obj is not None:  # memory_chunks writes the memory itself and hands nothing on
            self.store().put(context.asset_key.to_python_identifier(), obj)

    def load_input(self, context: dg.InputContext) -> dict[str, Any]:
        return self.store().get(context.asset_key.to_python_identifier(), context.asset_partition_keys)
