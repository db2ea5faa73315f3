"""Secret redaction, data: URI elision and the fail-closed egress gate (funes/redaction.py).

Secrets come from tests/helpers/fake_secrets.py, generated at run time; the clean corpus is
standard-library source plus synthetic transcript lines full of identifiers that look
random but are not credentials.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import sys
import sysconfig
import uuid
import zlib
from collections import Counter
from pathlib import Path

import fake_secrets
import pytest
from cryptography.hazmat.primitives import serialization
from fake_secrets import BASE62, KINDS, FakeSecret, generate_secrets, json_escaped

from funes import redaction
from funes.redaction import (
    EgressReport,
    Redaction,
    SecretScannerUnavailable,
    elide_data_uris,
    placeholder,
    redact,
    redact_many,
    rule_label,
    scan_for_egress,
)
from paths import ROOT




@pytest.fixture(scope="session", autouse=True)
def scanner(request, tmp_path_factory):
    """The process-wide scanner, its compiled rules cached across test runs."""
    cache = getattr(request.config, "cache", None)
    cache_dir = cache.mkdir("kingfisher-rules") if cache else tmp_path_factory.mktemp("kingfisher-rules")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KF_RULE_CACHE_DIR", str(cache_dir))
        return redaction.get_scanner()


@pytest.fixture(scope="module")
def secrets() -> dict[str, FakeSecret]:
    return {secret.kind: secret for secret in generate_secrets(seed=7)}


def assert_redacted(result: Redaction, secret: FakeSecret) -> None:
    assert result.text is not None, f"{secret.kind}: block dropped"
    for value in secret.values:
        for form in {value, json_escaped(value), json_escaped(json_escaped(value))}:
            assert form not in result.text, f"{secret.kind}: secret survived"
    assert "[REDACTED:" in result.text
    assert result.findings


# --------------------------------------------------------------------------- generator


def test_generator_covers_25_distinct_kinds():
    generated = generate_secrets(seed=1)
    assert len(KINDS) >= 25
    assert [secret.kind for secret in generated] == list(KINDS)
    for secret in generated:
        for value in secret.values:
            assert value in secret.context_text or json_escaped(value) in secret.context_text, secret.kind
    # Bodies are random per seed (private keys are fresh keys, made once per process).
    other = {secret.kind: secret.value for secret in generate_secrets(seed=2)}
    assert sum(secret.value != other[secret.kind] for secret in generated) >= 20


def test_generated_secrets_are_well_formed(secrets):
    classic = secrets["github_classic_pat"].value
    body, checksum = classic[4:34], classic[34:]
    number = zlib.crc32(body.encode())
    digits = ""
    while number:
        number, remainder = divmod(number, 62)
        digits = BASE62[remainder] + digits
    assert checksum == digits.rjust(6, "0")

    header, payload, _ = secrets["jwt_hs256"].value.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256", "typ": "JWT"}
    assert "sub" in json.loads(base64.urlsafe_b64decode(payload + "=="))

    serialization.load_pem_private_key(secrets["rsa_private_key"].value.encode(), password=None)
    serialization.load_ssh_private_key(secrets["openssh_private_key"].value.encode(), password=None)
    assert json.loads(secrets["rsa_private_key_json"].context_text)["type"] == "tool_result"


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_redacted(kind, secrets):
    assert_redacted(redact(secrets[kind].context_text), secrets[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_redacted_one_json_level_deeper(kind, secrets):
    """The block is itself a JSON string: an agent printed a transcript line."""
    secret = secrets[kind]
    assert_redacted(redact(json.dumps({"stdout": secret.context_text})), secret)


def test_every_kind_is_redacted_across_seeds():
    """Random bodies hit rule edges (a key ending in `-`, a password starting with `~`)."""
    generated = [secret for seed in range(40) for secret in generate_secrets(seed)]
    for secret, result in zip(generated, redact_many([secret.context_text for secret in generated]), strict=True):
        assert_redacted(result, secret)


def test_rule_edges():
    rng = random.Random(0)
    key = fake_secrets.openai_project_key(rng)[:-1] + "-"
    assert redact(f"OPENAI_API_KEY={key}\n").text == "OPENAI_API_KEY=[REDACTED:openai-api-key]\n"
    password = "~" + fake_secrets.password(rng)
    assert redact(f"DB_PASSWORD={password}\n").text == "DB_PASSWORD=[REDACTED:env-password]\n"
    for reference in ("$DB_PASS_FROM_VAULT", "${DB_PASSWORD:-changeme}", "~/.config/db/password", "/run/secrets/db"):
        assert redact(f"DB_PASSWORD={reference}\n").findings == Counter(), reference


# A password alone is just a word: the variable name, key or URL around it is the evidence.
NEEDS_CONTEXT = {"env_password", "yaml_password", "env_password_json", "yaml_password_json", "postgres_url_json",
                 *(kind for kind in KINDS if kind.endswith("_url"))}


def test_bare_values_are_redacted(secrets):
    for secret in secrets.values():
        if secret.kind in NEEDS_CONTEXT:
            continue
        result = redact(secret.value)
        assert result.text is not None and secret.value not in result.text, secret.kind


def test_helper_findings_are_redacted(secrets):
    """kingfisher reports the AWS secret key only as an invisible helper of the key id."""
    pair = secrets["aws_key_pair"]
    result = redact(pair.context_text)
    assert_redacted(result, pair)
    assert result.findings["betterleaks.aws-secret-access-key"] == 1
    assert "aws_secret_access_key = [REDACTED:aws-secret-access-key]" in result.text
    assert "aws_access_key_id = [REDACTED:aws-access-token]" in result.text

    # Found alone (no key id near it), the helper is still redacted.
    secret_key = pair.companions[0]
    alone = redact(f"export AWS_SECRET_ACCESS_KEY={secret_key}\n")
    assert alone.text is not None and secret_key not in alone.text


def test_redaction_keeps_the_rest_of_the_text(secrets):
    secret = secrets["env_password"]
    result = redact(secret.context_text)
    assert result.text == secret.context_text.replace(secret.value, "[REDACTED:env-password]")
    assert result.findings == Counter({"funes.env-password": 1})


def test_counts_occurrences_once_per_occurrence(secrets):
    token = secrets["github_oauth_token"].value
    assert redact(f"a {token}\nb {token}\n").findings == Counter({"betterleaks.github-oauth": 2})
    # Found both in the text and in its JSON-unescaped view: still one occurrence.
    assert redact(json.dumps({"out": f"token {token}\n"})).findings == Counter({"betterleaks.github-oauth": 1})


def test_secrets_next_to_non_ascii_and_lone_surrogates(secrets):
    token = secrets["hf_token_bare"].value
    result = redact(f"héllo wörld 日本語 \ud800 token {token} ✓")
    assert result.text == "héllo wörld 日本語 \ud800 token [REDACTED:huggingface-access-token] ✓"


def test_clean_text_is_returned_unchanged():
    text = "Ran the tests: 42 passed.\nNext: fix the flaky retry in client.py.\n"
    result = redact(text)
    assert result == Redaction(text)
    assert not result.dropped and result.text is text


def test_base64_encoded_secret_drops_the_block(secrets):
    """kingfisher finds secrets inside base64 blobs; they cannot be located, so the block goes."""
    encoded = base64.b64encode(secrets["github_oauth_token"].context_text.encode()).decode()
    result = redact(f"config blob: {encoded}\n")
    assert result.dropped
    assert result.findings == Counter({"betterleaks.github-oauth": 1})


class StubFinding:
    def __init__(self, secret: str, rule_id: str = "custom.stub", visible: bool = True):
        self.secret, self.rule_id, self.visible = secret, rule_id, visible
        self.is_base64_encoded = False
        self.location = {"start_offset": 0, "end_offset": 1}


class StubScanner:
    """Flags ``secret`` in any text containing ``trigger``."""

    def __init__(self, trigger: bytes, secret: str):
        self.trigger, self.secret = trigger, secret

    def scan(self, data: bytes):
        return [StubFinding(self.secret)] if self.trigger in data else []


def test_unlocatable_secret_drops_the_block(monkeypatch):
    monkeypatch.setattr(redaction, "get_scanner", lambda: StubScanner(b"token", "not-in-the-text"))
    assert redact("the token is somewhere").dropped
    assert redact_many(["the token is somewhere", "clean"]) == [
        Redaction(None, Counter({"custom.stub": 1})),
        Redaction("clean"),
    ]


def test_secret_still_found_after_redaction_drops_the_block(monkeypatch):
    monkeypatch.setattr(redaction, "get_scanner", lambda: StubScanner(b"token", "abc"))
    result = redact("token abc")
    assert result.dropped and result.findings == Counter({"custom.stub": 1})


def test_redact_needs_the_scanner(monkeypatch):
    def unavailable():
        raise SecretScannerUnavailable("no scanner")

    monkeypatch.setattr(redaction, "get_scanner", unavailable)
    with pytest.raises(SecretScannerUnavailable):
        redact("anything")


def test_overlapping_secrets_become_one_placeholder():
    text = "0123456789"
    spans = [(2, 6, "[A]"), (4, 8, "[B]"), (8, 9, "[C]")]
    assert redaction._replace_spans(text, spans) == "01[A][C]9"


def test_rule_labels():
    assert rule_label("betterleaks.github-pat") == "github-pat"
    assert rule_label("funes.env-password") == "env-password"
    assert rule_label("veles.secrets/slackappleveltoken") == "slackappleveltoken"
    assert placeholder("betterleaks.jwt") == "[REDACTED:jwt]"


def test_redact_many_agrees_with_redact(secrets, clean_corpus):
    """The joint pre-check never misses what a scan of each text alone would find."""
    rng = random.Random(3)
    texts = [text for _, text in clean_corpus[:2000] + clean_corpus[-100:]]
    for secret in secrets.values():
        # Anywhere in the batch, alone (secret at the very start and end) and in context.
        texts.insert(rng.randrange(len(texts)), secret.value)
        texts.insert(rng.randrange(len(texts)), secret.context_text)
        texts.insert(rng.randrange(len(texts)), json.dumps(secret.context_text))
    assert redact_many(texts) == [redact(text) for text in texts]


# --------------------------------------------------------------------------- false positives


def synthetic_transcript_lines(seed: int, count: int) -> list[str]:
    """Tool output full of random identifiers that are not secrets."""
    rng = random.Random(seed)

    def b64(n: int) -> str:
        return base64.b64encode(rng.randbytes(n)).decode()

    makers = [
        lambda: f"commit {rng.randbytes(20).hex()}\nAuthor: Dev <dev@example.com>\n",
        lambda: f"HEAD is now at {rng.randbytes(4).hex()[:7]} Fix retry loop",
        lambda: f"request_id={uuid.UUID(bytes=rng.randbytes(16))} status=200 took={rng.randrange(999)}ms",
        lambda: f"{hashlib.sha256(rng.randbytes(8)).hexdigest()}  dist/app-{rng.randrange(99)}.tar.gz",
        lambda: f"image: ghcr.io/acme/app@sha256:{rng.randbytes(32).hex()}",
        lambda: f'"integrity": "sha512-{b64(64)}"',
        lambda: f"cache key: {b64(32)} (hit)",
        lambda: f"ETag: W/\"{rng.randbytes(12).hex()}\"",
        lambda: f"trace_id={rng.randbytes(16).hex()} span_id={rng.randbytes(8).hex()}",
        lambda: "Enter your password: \nexport DB_PASSWORD=${DB_PASSWORD:-}\nPASSWORD=$(cat /run/secrets/db)",
        lambda: 'password: "{{ vault_db_password }}"\nsecret: "<your secret here>"',
        lambda: f"SECRET_KEY_FILE=/run/secrets/app_{rng.randrange(99)}\nPASSWORD_MIN_LENGTH=12",
        lambda: f"session {uuid.UUID(bytes=rng.randbytes(16))}: {rng.randrange(9999)} tokens used",
        lambda: f'![chart](data:image/png;base64,{b64(300)})',
    ]
    lines = [rng.choice(makers)() for _ in range(count)]
    # The same output as it sits inside a JSON transcript line.
    return lines + [json.dumps({"type": "tool_result", "content": line}) for line in lines[: count // 4]]


def stdlib_sources(budget: int) -> list[tuple[str, str]]:
    """Standard-library modules, credential-handling ones first, up to ``budget`` characters."""
    root = Path(sysconfig.get_paths()["stdlib"])
    first = ["smtplib.py", "imaplib.py", "poplib.py", "ftplib.py", "netrc.py", "getpass.py", "hmac.py",
             "secrets.py", "ssl.py", "base64.py", "uuid.py", "hashlib.py", "http", "urllib", "email", "json"]
    skip = {"test", "tests", "idle_test", "site-packages", "__pycache__"}
    ordered = [root / name for name in first]
    paths = [path for entry in ordered for path in ([entry] if entry.is_file() else sorted(entry.rglob("*.py")))]
    paths += sorted(path for path in root.rglob("*.py") if path not in set(paths))
    sources, size = [], 0
    for path in paths:
        if skip & set(path.relative_to(root).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        sources.append((str(path.relative_to(root)), text))
        size += len(text)
        if size >= budget:
            break
    return sources


@pytest.fixture(scope="module")
def clean_corpus() -> list[tuple[str, str]]:
    lines = synthetic_transcript_lines(seed=11, count=8000)
    return [(f"line-{i}", line) for i, line in enumerate(lines)] + stdlib_sources(budget=3_000_000)


def test_clean_corpus_has_no_findings(clean_corpus):
    assert sum(len(text) for _, text in clean_corpus) > 3_000_000
    report = scan_for_egress(clean_corpus)
    assert report.clean, report.summary()
    assert report.scanned == len(clean_corpus)
    texts = [elide_data_uris(text) for _, text in clean_corpus]
    assert all(result.findings == Counter() for result in redact_many(texts))


def test_redacted_text_passes_the_egress_gate(secrets):
    redacted = {kind: redact(secret.context_text).text for kind, secret in secrets.items()}
    assert scan_for_egress(redacted.items()).clean


def test_redaction_sources_hold_no_token_shaped_literals():
    """What GitHub push protection (and funes' own gate) would refuse."""
    paths = ["funes/redaction.py", "funes/secret_rules.yaml", "tests/helpers/fake_secrets.py", "tests/memory/test_redaction.py"]
    report = scan_for_egress((path, (ROOT / path).read_text()) for path in paths)
    assert report.clean, report.summary()


# --------------------------------------------------------------------------- data: URIs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("![x](data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==)", "![x](data:image/png;base64,[elided])"),
        ('{"url": "data:image/svg+xml;base64,PHN2ZyB4bWxucz0i"}', '{"url": "data:image/svg+xml;base64,[elided]"}'),
        ("data:text/plain;charset=utf-8;base64,aGVsbG8gd29ybGQ=", "data:text/plain;charset=utf-8;base64,[elided]"),
        ("a data:;base64,QUJD b data:image/gif;base64,R0lGOD c", "a data:;base64,[elided] b data:image/gif;base64,[elided] c"),
        ("src='data:image/webp;base64,UklGRh4A-_/+'", "src='data:image/webp;base64,[elided]'"),
    ],
)
def test_data_uri_payloads_are_elided(text, expected):
    assert elide_data_uris(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "metadata:image/png;base64,iVBORw0KGgo",  # `data:` inside a word
        "user_data:image/png;base64,iVBORw0KGgo",
        "data: image/png;base64,iVBORw0KGgo",  # whitespace in the media part
        'data:image/"png;base64,iVBORw0KGgo',  # quote in the media part
        "data:text/plain,hello%20world",  # not base64
        "The data: it shows a 3% regression; base64, not hex, is used.",
        "no uri at all",
    ],
)
def test_text_that_is_not_a_data_uri_is_untouched(text):
    assert elide_data_uris(text) == text


def test_data_uri_elision_leaves_long_prose_alone():
    prose = "The metadata: and the data: fields, base64, encoded; " * 20_000
    assert elide_data_uris(prose) == prose


# --------------------------------------------------------------------------- egress gate


def test_egress_report_names_keys_and_counts_visible_findings(secrets):
    texts = [("clean", "nothing to see"), ("pair", secrets["aws_key_pair"].context_text),
             ("hf", secrets["hf_token_env"].context_text)]
    report = scan_for_egress(texts)
    assert not report.clean and report.scanned == 3 and not report.failed
    assert set(report.flagged) == {"pair", "hf"}
    # The invisible helper (the secret key) is not counted next to its key id.
    assert report.flagged["pair"] == Counter({"betterleaks.aws-access-token": 1, "funes.aws-access-key-id": 1})
    assert report.counts["betterleaks.huggingface-access-token"] == 1


def test_egress_counts_a_helper_found_alone(secrets):
    secret_key = secrets["aws_key_pair"].companions[0]
    report = scan_for_egress([("env", f"AWS_SECRET_ACCESS_KEY={secret_key}")])
    assert "env" in report.flagged and sum(report.flagged["env"].values()) >= 1


def test_egress_report_never_holds_a_secret(secrets):
    report = scan_for_egress((kind, secret.context_text) for kind, secret in secrets.items())
    assert set(report.flagged) == set(KINDS)
    shown = repr(report) + report.summary() + repr(report.counts)
    for secret in secrets.values():
        for value in secret.values:
            assert value not in shown and json_escaped(value) not in shown


def test_egress_fails_closed_when_the_scanner_cannot_be_loaded(monkeypatch):
    monkeypatch.setattr(redaction, "_scanner", None)
    monkeypatch.setitem(sys.modules, "kingfisher_sdk", None)  # import fails
    report = scan_for_egress([("a", "hello"), ("b", "world")])
    assert not report.clean and not report.flagged
    assert set(report.failed) == {"a", "b"}
    assert "not installed" in report.summary()


def test_egress_fails_closed_when_the_rules_do_not_compile(monkeypatch):
    import kingfisher_sdk

    def broken_rules(*args, **kwargs):
        raise ValueError("invalid regex in rule funes.broken")

    monkeypatch.setattr(redaction, "_scanner", None)
    monkeypatch.setattr(kingfisher_sdk, "Rules", broken_rules)
    report = scan_for_egress([("a", "hello")])
    assert list(report.failed) == ["a"] and "failed to compile" in report.failed["a"]


def test_egress_fails_closed_when_the_scanner_raises_on_one_text(monkeypatch):
    class Exploding:
        def scan(self, data: bytes):
            if b"boom" in data:
                raise RuntimeError("scanner crashed on " + data.decode())
            return []

    monkeypatch.setattr(redaction, "get_scanner", lambda: Exploding())
    report = scan_for_egress([("ok", "fine"), ("bad", "boom hf_secretish"), ("ok2", "also fine")])
    assert not report.clean
    assert report.failed == {"bad": "the scanner raised RuntimeError"}
    assert report.scanned == 3 and not report.flagged
    assert "hf_secretish" not in report.summary()


def test_empty_egress_is_clean():
    report = scan_for_egress([])
    assert report == EgressReport(0, {}, {}) and report.clean


def test_rule_cache_dir_and_no_cache_when_unwritable(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("KF_RULE_CACHE_DIR", str(blocker / "kingfisher"))
    assert redaction._writable_cache_dir() is None
    monkeypatch.delenv("KF_RULE_CACHE_DIR")
    monkeypatch.setenv("FUNES_CACHE_DIR", str(tmp_path / "cache"))
    assert redaction._writable_cache_dir() == tmp_path / "cache" / "kingfisher"


def test_the_scanner_compiled_in_the_background_is_the_one_redaction_uses(monkeypatch):
    """A first index starts compiling the rules while the memory opens; redaction
    asking meanwhile waits for that compile rather than running a second one, and a
    compile that fails in the background fails again, with its message, where used."""
    import threading
    import time

    compiles: list[str] = []
    started = threading.Event()

    def slow_build():
        compiles.append(threading.current_thread().name)
        started.set()
        time.sleep(0.3)
        return StubScanner(b"token", "token")

    monkeypatch.setattr(redaction, "_scanner", None)
    monkeypatch.setattr(redaction, "_build_scanner", slow_build)
    redaction.start_compiling_scanner()
    assert started.wait(5)
    assert redact("a token here").text == "a [REDACTED:stub] here"  # the background's scanner
    assert compiles == ["funes-secret-rules"]

    def broken():
        compiles.append(threading.current_thread().name)
        raise SecretScannerUnavailable("the secret rules failed to compile: bad rule")

    monkeypatch.setattr(redaction, "_scanner", None)
    monkeypatch.setattr(redaction, "_build_scanner", broken)
    redaction.start_compiling_scanner()
    for thread in threading.enumerate():
        if thread.name == "funes-secret-rules":
            thread.join(5)
    with pytest.raises(SecretScannerUnavailable, match="failed to compile: bad rule"):
        redact("a token here")
    assert compiles[1:] == ["funes-secret-rules", "MainThread"]  # a failure is not remembered: tried again
