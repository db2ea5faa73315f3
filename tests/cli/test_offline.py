"""A remote memory that cannot be reached: a one-line error and exit 6 (docs/contract.md),
from the real clients against real unreachable endpoints: a closed loopback port, a host
name that cannot resolve (`.invalid` never does), and a server that accepts connections
and never answers."""

import socket

import pytest

from hub_helpers import env_with, funes


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


UNREACHABLE = {"closed-port": lambda: f"http://127.0.0.1:{closed_port()}",
               "unresolvable-name": lambda: "http://funes-offline.invalid"}


def assert_unreachable(result, prefix: str) -> None:
    assert result.returncode == 6, result.stderr
    assert result.stderr.startswith(prefix), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", UNREACHABLE)
def test_an_unreachable_hub_is_exit_6_in_one_line(kind):
    from hub_helpers import chunk, write_memory

    write_memory([chunk("5e550000-0000-4000-8000-00000000off0", turn, f"turn {turn} of a memory to publish")
                  for turn in range(3)])  # something to push
    endpoint = UNREACHABLE[kind]()
    env = env_with(HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_TOKEN="hf_offline_test")
    for args in (["push", "me/x", "--yes"], ["recall", "anything", "--memory", "me/x"],
                 ["status", "--memory", "hf://datasets/me/x"]):
        result = funes(*args, env=env)
        assert_unreachable(result, f"funes: cannot read me/x on {endpoint}: the Hub cannot be reached (")


@pytest.mark.slow
def test_a_hub_that_never_answers_times_out_with_exit_6():
    # Connections complete in the kernel's backlog; nothing ever reads or answers them.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        result = funes("recall", "anything", "--memory", "me/x", timeout=120,
                       env=env_with(HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0"))
    assert_unreachable(result, f"funes: cannot read me/x on {endpoint}: the Hub cannot be reached (ReadTimeout")


@pytest.mark.slow
@pytest.mark.parametrize("kind", UNREACHABLE)
def test_an_unreachable_object_store_is_exit_6_in_one_line(tmp_path, kind):
    from hub_helpers import write_claude_session

    endpoint = UNREACHABLE[kind]()
    env = env_with(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="test-key-id", AWS_SECRET_ACCESS_KEY="test-secret",
                   AWS_REGION="us-east-1")
    transcript = write_claude_session(tmp_path / "t" / "s.jsonl", "5e550000-0000-4000-8000-00000000off1",
                                      ["Where does the team memory live?", "In the team-memory bucket."])
    uri = "s3://team-memory/offline"
    for args, verb in ((["status", "--memory", uri], "read"), (["recall", "bucket", "--memory", uri], "read"),
                       (["index", str(transcript), "--memory", uri, "--yes"], "open")):
        result = funes(*args, env=env)
        assert_unreachable(result, f"funes: cannot {verb} memory at {uri}: the object store at {endpoint}"
                                   " cannot be reached or read (")
