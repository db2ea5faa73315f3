"""Fake but well-formed secrets, generated at run time.

Nothing token-shaped is ever written in the repository (GitHub push protection and
funes' own egress gate would flag it): every credential is assembled here from a
provider prefix and a random body drawn from the provider's alphabet.  Private keys
are real keys made with ``cryptography`` and thrown away.

``generate_secrets(seed)`` returns one :class:`FakeSecret` per kind in
:data:`KINDS`.  ``context_text`` is the text of a transcript block that carries the
secret; the ``*_json`` kinds are tool results whose output is itself JSON, so the
secret appears JSON-escaped (``\\n`` before an env line, ``\\"`` around a quoted
value, a PEM key on one line).  Everything in ``values`` must be gone, raw and
JSON-escaped, after redaction.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import string
import zlib
from dataclasses import dataclass
from functools import cache
from urllib.parse import quote

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = DIGITS + UPPER + LOWER
# GitHub's checksum tail is base62 in this digit order (0-9, A-Z, a-z).
BASE62 = ALNUM
BASE32_UPPER = UPPER + "234567"
AWS_SECRET_ALPHABET = ALNUM + "/+"
URLSAFE = ALNUM + "-_"
PASSWORD_ALPHABET = ALNUM + "!#%+-.@^_~"

# Provider markers kept as fragments so no line of this file looks like a token.
OPENAI_MARKER = base64.b64encode(b"OpenAI").decode()
MONGODB_SRV = "mongodb" + "+srv"


@dataclass(frozen=True)
class FakeSecret:
    """One planted credential.

    ``value`` is the credential itself; ``companions`` are further secret strings in
    the same text that a scanner finds only through ``value`` (the AWS secret access
    key next to its key id).
    """

    kind: str
    value: str
    context_text: str
    companions: tuple[str, ...] = ()

    @property
    def values(self) -> tuple[str, ...]:
        return (self.value, *self.companions)


def json_escaped(text: str) -> str:
    """``text`` as it appears inside a JSON string literal."""
    return json.dumps(text)[1:-1]


def _draw(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _base62(number: int, width: int) -> str:
    digits = ""
    while number:
        number, remainder = divmod(number, 62)
        digits = BASE62[remainder] + digits
    return digits.rjust(width, "0")


def aws_access_key_id(rng: random.Random) -> str:
    return "AK" + "IA" + _draw(rng, BASE32_UPPER, 16)


def aws_secret_access_key(rng: random.Random) -> str:
    return _draw(rng, AWS_SECRET_ALPHABET, 40)


def github_classic_pat(rng: random.Random) -> str:
    """``ghp_`` + 30 random base62 characters + their CRC32 in 6 base62 digits."""
    body = _draw(rng, ALNUM, 30)
    return "gh" + "p_" + body + _base62(zlib.crc32(body.encode()), 6)


def github_fine_grained_pat(rng: random.Random) -> str:
    return "github" + "_pat_" + "11" + _draw(rng, UPPER + DIGITS, 20) + "_" + _draw(rng, ALNUM, 59)


def github_oauth_token(rng: random.Random) -> str:
    return "gh" + "o_" + _draw(rng, ALNUM, 36)


def hf_token(rng: random.Random) -> str:
    return "hf" + "_" + _draw(rng, UPPER + LOWER, 34)


def openai_legacy_key(rng: random.Random) -> str:
    return "sk" + "-" + _draw(rng, ALNUM, 20) + OPENAI_MARKER + _draw(rng, ALNUM, 20)


def openai_project_key(rng: random.Random) -> str:
    return "sk" + "-proj-" + _draw(rng, URLSAFE, 74) + OPENAI_MARKER + _draw(rng, URLSAFE, 74)


def anthropic_key(rng: random.Random) -> str:
    return "sk" + "-ant-api03-" + _draw(rng, URLSAFE, 93) + "AA"


def jwt_hs256(rng: random.Random) -> str:
    def segment(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = segment(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": _draw(rng, DIGITS, 10), "name": "deploy-bot", "iat": rng.randrange(1_600_000_000, 1_800_000_000)}
    payload = segment(json.dumps(claims).encode())
    key = rng.randbytes(32)
    signature = segment(hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    return f"{header}.{payload}.{signature}"


def password(rng: random.Random) -> str:
    # At least one of each class so the value reads like a real password.
    chars = [rng.choice(UPPER), rng.choice(LOWER), rng.choice(DIGITS), rng.choice("!#%+-.@^_~")]
    chars += [rng.choice(PASSWORD_ALPHABET) for _ in range(16)]
    rng.shuffle(chars)
    return "".join(chars)


def slack_bot_token(rng: random.Random) -> str:
    return "xo" + "xb-" + _draw(rng, DIGITS, 12) + "-" + _draw(rng, DIGITS, 13) + "-" + _draw(rng, ALNUM, 24)


def stripe_live_key(rng: random.Random) -> str:
    return "sk" + "_live_" + _draw(rng, ALNUM, 24)


def gcp_api_key(rng: random.Random) -> str:
    return "AI" + "za" + _draw(rng, URLSAFE, 35)


# Key generation is the slow part (RSA: tens of ms), and any real key will do, so
# one of each per process is enough.
@cache
def rsa_private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode().strip()


@cache
def openssh_private_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode().strip()


def _tool_result(output: str) -> str:
    """A tool_result content block whose output text is ``output``."""
    return json.dumps({"type": "tool_result", "tool_use_id": "toolu_01", "content": output})


def generate_secrets(seed: int = 0) -> list[FakeSecret]:
    """One fake secret per kind in :data:`KINDS`, in that order; bodies depend on ``seed``."""
    rng = random.Random(seed)
    key_id, secret_key, bare_key_id = aws_access_key_id(rng), aws_secret_access_key(rng), aws_access_key_id(rng)
    json_key_id, json_secret_key = aws_access_key_id(rng), aws_secret_access_key(rng)
    classic, fine_grained, oauth = github_classic_pat(rng), github_fine_grained_pat(rng), github_oauth_token(rng)
    hf_env, hf_bare, hf_json = hf_token(rng), hf_token(rng), hf_token(rng)
    openai_legacy, openai_project, anthropic = openai_legacy_key(rng), openai_project_key(rng), anthropic_key(rng)
    jwt, slack, stripe, gcp = jwt_hs256(rng), slack_bot_token(rng), stripe_live_key(rng), gcp_api_key(rng)
    db_password, yaml_password = password(rng), password(rng)
    json_db_password, json_yaml_password = password(rng), password(rng)
    # An `@` in a URL's password would have to be percent-encoded.
    url_password, json_url_password = password(rng).replace("@", "_"), password(rng).replace("@", "_")
    # Connection URLs of every common scheme on realistic hosts, with the password
    # percent-encoded as drivers require, and one pasted raw (`#`, `@`, `%` and all).
    mysql_password, mongodb_password, redis_password, amqp_password, basic_auth_password, sqlalchemy_password = (
        quote(password(rng), safe="") for _ in range(6))
    raw_url_password = password(rng)
    rsa_pem, openssh = rsa_private_key_pem(), openssh_private_key()
    secrets = [
        FakeSecret(
            "aws_key_pair",
            key_id,
            f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {key_id}\n"
            f"aws_secret_access_key = {secret_key}\nregion = eu-west-1\n",
            companions=(secret_key,),
        ),
        FakeSecret("aws_access_key_id", bare_key_id, f"CloudTrail shows the call came from access key {bare_key_id} (user deploy-bot)."),
        FakeSecret("github_classic_pat", classic, f"git remote set-url origin https://x-access-token:{classic}@github.com/acme/app.git"),
        FakeSecret("github_fine_grained_pat", fine_grained, f"export GH_TOKEN={fine_grained}\ngh pr list"),
        FakeSecret("github_oauth_token", oauth, f"oauth_token: {oauth}\nuser: octocat\n"),
        FakeSecret("hf_token_env", hf_env, f"HF_TOKEN={hf_env}\nHF_HOME=/data/hf\n"),
        FakeSecret("hf_token_bare", hf_bare, f"Use the token {hf_bare} to log in, then push the model."),
        FakeSecret("openai_legacy_key", openai_legacy, f'client = OpenAI(api_key="{openai_legacy}")'),
        FakeSecret("openai_project_key", openai_project, f"OPENAI_API_KEY={openai_project}\n"),
        FakeSecret("anthropic_key", anthropic, f"curl https://api.anthropic.com/v1/messages -H 'x-api-key: {anthropic}'"),
        FakeSecret("rsa_private_key", rsa_pem, f"$ cat deploy/id_rsa\n{rsa_pem}\n$ "),
        FakeSecret("openssh_private_key", openssh, f"$ cat ~/.ssh/id_ed25519\n{openssh}\n"),
        FakeSecret("jwt_hs256", jwt, f"Authorization: Bearer {jwt}\n"),
        FakeSecret("env_password", db_password, f"$ env | sort\nDB_HOST=db.internal\nDB_PASSWORD={db_password}\nDB_USER=app\n"),
        FakeSecret("yaml_password", yaml_password, f'database:\n  user: app\n  password: "{yaml_password}"\n  host: db.internal\n'),
        FakeSecret(
            "postgres_url",
            url_password,
            f"DATABASE_URL=postgresql://app:{url_password}@db.internal:5432/orders?sslmode=require",
        ),
        FakeSecret("mysql_url", mysql_password,
                   f"mysql -e 'select 1' mysql://shop:{mysql_password}@mysql-3.prod.acme-corp.io:3306/shop"),
        FakeSecret("mongodb_srv_url", mongodb_password,
                   f'MONGO_URI="{MONGODB_SRV}://app:{mongodb_password}@cluster0.x7k2p.mongodb.net/orders'
                   '?retryWrites=true&w=majority"'),
        FakeSecret("redis_url", redis_password, f"celery.conf.broker_url = 'rediss://default:{redis_password}"
                   "@cache-7.eu-west-1.acme-corp.io:6380/0'"),
        FakeSecret("amqp_url", amqp_password, f"connecting to amqps://worker:{amqp_password}@rabbit.svc.acme-corp.io:5671/jobs ..."),
        FakeSecret("https_basic_auth_url", basic_auth_password,
                   f"pip install --index-url https://ci:{basic_auth_password}@pypi.acme-corp.io/simple/ acme-tools"),
        FakeSecret("sqlalchemy_url", sqlalchemy_password,
                   f'engine = create_engine("postgresql+psycopg2://api:{sqlalchemy_password}@10.20.3.7:5432/api")'),
        FakeSecret("raw_password_url", raw_url_password,
                   f"the DSN is sftp://deploy:{raw_url_password}@files.acme-corp.io/uploads (password not encoded)"),
        FakeSecret("slack_bot_token", slack, f'slack = WebClient(token="{slack}")'),
        FakeSecret("stripe_live_key", stripe, f"stripe.api_key = '{stripe}'"),
        FakeSecret("gcp_api_key", gcp, f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={gcp}"),
        FakeSecret(
            "env_password_json",
            json_db_password,
            _tool_result(f"HOME=/home/app\nAPP_DB_PASSWORD={json_db_password}\nPATH=/usr/bin\n"),
        ),
        FakeSecret(
            "yaml_password_json",
            json_yaml_password,
            _tool_result(f'redis:\n  password: "{json_yaml_password}"\n  port: 6379\n'),
        ),
        FakeSecret(
            "aws_key_pair_json",
            json_key_id,
            _tool_result(json.dumps({"AccessKey": {"AccessKeyId": json_key_id, "SecretAccessKey": json_secret_key}}, indent=2)),
            companions=(json_secret_key,),
        ),
        FakeSecret("hf_token_json", hf_json, _tool_result(json.dumps({"hf_token": hf_json, "repo": "acme/model"}, indent=1))),
        FakeSecret("rsa_private_key_json", rsa_pem, _tool_result(f"-- deploy/id_rsa --\n{rsa_pem}\n")),
        FakeSecret(
            "postgres_url_json",
            json_url_password,
            _tool_result(json.dumps({"DATABASE_URL": f"postgres://app:{json_url_password}@db.internal/orders"})),
        ),
    ]
    assert [s.kind for s in secrets] == list(KINDS)
    return secrets


KINDS = (
    "aws_key_pair",
    "aws_access_key_id",
    "github_classic_pat",
    "github_fine_grained_pat",
    "github_oauth_token",
    "hf_token_env",
    "hf_token_bare",
    "openai_legacy_key",
    "openai_project_key",
    "anthropic_key",
    "rsa_private_key",
    "openssh_private_key",
    "jwt_hs256",
    "env_password",
    "yaml_password",
    "postgres_url",
    "mysql_url",
    "mongodb_srv_url",
    "redis_url",
    "amqp_url",
    "https_basic_auth_url",
    "sqlalchemy_url",
    "raw_password_url",
    "slack_bot_token",
    "stripe_live_key",
    "gcp_api_key",
    "env_password_json",
    "yaml_password_json",
    "aws_key_pair_json",
    "hf_token_json",
    "rsa_private_key_json",
    "postgres_url_json",
)
