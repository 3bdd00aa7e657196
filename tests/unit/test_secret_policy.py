"""Secrets through the core's ``SkipPolicy``: credential files by name and path are skipped,
code and templates are kept, and a private key block anywhere in a kept file is redacted with
its line numbers intact; ``allow_secrets`` keeps everything whole."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codebase_mcp_search.core.models import SkipReason
from codebase_mcp_search.core.policies import IgnoreFiles, SkipPolicy
from codebase_mcp_search.core.policies.skipping import SNIFF_BYTES

NONE = IgnoreFiles()
STRICT, ALLOWED = SkipPolicy(), SkipPolicy(allow_secrets=True)

# One per kind: the list, and the common kinds besides.
SECRET_FILES = [
    ".env",
    "config/.env.production",
    "deploy/prod.env",
    ".envrc",
    ".ssh/id_rsa",
    ".ssh/id_ed25519",
    ".ssh/id_ecdsa",
    ".ssh/id_dsa",
    "keys/deploy_rsa",
    "etc/ssh/ssh_host_ed25519_key",
    "certs/server.pem",
    "certs/server.key",
    "keys/AuthKey_ABC123.p8",
    "certs/client.p12",
    "certs/client.pfx",
    "keys/putty.ppk",
    "android/release.jks",
    "android/release.keystore",
    "krb5.keytab",
    "vpn/office.ovpn",
    "vault/passwords.kdbx",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".boto",
    ".s3cfg",
    ".dockercfg",
    ".docker/config.json",
    ".kube/config",
    "clusters/kubeconfig",
    "clusters/prod.kubeconfig",
    "clusters/kubeconfig-staging.yaml",
    ".vault-token",
    ".terraformrc",
    ".databrickscfg",
    ".config/gh/hosts.yml",
    ".aws/credentials",
    ".gem/credentials",
    ".cargo/credentials.toml",
    "credentials.json",
    "gcp/credentials-prod.json",
    ".config/gcloud/application_default_credentials.json",
    ".config/gcloud/legacy_credentials/me@example.com/adc.json",
    "jenkins/credentials.xml",
    "aws/rootkey_accessKeys.csv",
    ".azure/msal_token_cache.json",
    "config/secrets.yaml",
    "k8s/secret.yml",
    "deploy/prod-secrets.json",
    "client_secret_123.apps.googleusercontent.com.json",
    "jwt.secret",
    "service-account.json",
    "gcp/serviceAccountKey.json",
    "infra/terraform.tfstate",
    "infra/terraform.tfstate.backup",
    "infra/prod.tfvars",
    "infra/secrets.auto.tfvars.json",
    "src/main/resources/application-prod.properties",
    "src/main/resources/application-production.yml",
    "android/keystore.properties",
    "web/.htpasswd",
    "etc/shadow",
    "etc/wireguard/wg0.conf",
]
# Code, public halves, templates and ordinary config: never secrets by name.
KEPT_FILES = [
    "secret.py",
    "secrets.py",
    "pkg/secrets_manager.go",
    "auth/credentials.py",
    "auth/credentials_test.go",
    "k8s/kubeconfig.go",
    "k8s/kubeconfig_test.go",
    "shadow.go",
    "env.py",
    "src/environment.ts",
    "crypto/rsa.go",
    ".ssh/id_rsa.pub",
    ".ssh/known_hosts",
    ".env.example",
    ".env.dist",
    "config/secrets.example.yaml",
    "credentials.sample.json",
    "infra/prod.tfvars.example",
    "helm/templates/secret.yaml.tpl",
    ".aws/config",
    ".docker/daemon.json",
    ".kube/cache/discovery.json",
    "src/main/resources/application.properties",
    "src/main/resources/application-dev.yml",
    "service_account.py",
    "KEYS.asc",
    "docker-compose.yml",
]


@pytest.mark.parametrize("rel", SECRET_FILES)
def test_a_credential_file_is_skipped_as_a_secret_unless_allowed(rel: str) -> None:
    assert STRICT.skip_file(rel, NONE) is SkipReason.SECRET
    assert STRICT.skip_target(rel) is SkipReason.SECRET  # a link to one, whatever its name
    assert STRICT.skip_file(rel.upper(), NONE) is SkipReason.SECRET
    assert ALLOWED.skip_file(rel, NONE) is None


@pytest.mark.parametrize("rel", KEPT_FILES)
def test_code_templates_and_ordinary_config_are_kept(rel: str) -> None:
    assert STRICT.skip_file(rel, NONE) is None


# --- Private key blocks in content ---------------------------------------------------------


def body(seed: int, lines: int = 4) -> list[str]:
    """Base64 lines as a key's body holds them (generated: no real key sits in this file)."""
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(lines - 1)]
    return [*out, "".join(rng.choice(alphabet) for _ in range(20)) + "=="]


def pem(label: str, lines: list[str], eol: str = "\n", indent: str = "") -> str:
    rows = [f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]
    return "".join(indent + row + eol for row in rows)


B = body(1)
AFTER = "\n\ndef still_searchable():\n    return 42\n"


def _java(lines: list[str]) -> str:
    rows = ["-----BEGIN PRIVATE KEY-----", *lines, "-----END PRIVATE KEY-----"]
    return "String key =\n" + " +\n".join(f'    "{r}\\n"' for r in rows) + ";\n" + AFTER


def _json(lines: list[str]) -> str:
    key = "\\n".join(["-----BEGIN PRIVATE KEY-----", *lines, "-----END PRIVATE KEY-----", ""])
    return '{\n  "type": "service_account",\n  "private_key": "' + key + '",\n  "x": 1\n}\n'


# Each: how code or data holds the key ``lines``; the text around must survive.
EMBEDDINGS: dict[str, Callable[[list[str]], str]] = {
    "pem_after_a_comment": lambda b: "# deploy key\n" + pem("RSA PRIVATE KEY", b) + AFTER,
    "python_triple_quoted": lambda b: 'KEY = """\n' + pem("RSA PRIVATE KEY", b) + '"""' + AFTER,
    "after_the_first_8_kib": lambda b: (
        "x = 1\n" * (SNIFF_BYTES // 6 + 10) + 'KEY = """' + pem("EC PRIVATE KEY", b) + '"""' + AFTER
    ),
    "java_concatenation": _java,
    "json_one_line": _json,
    "json_in_a_string": lambda b: _json(b).replace("\\n", "\\\\n"),
    "yaml_block": lambda b: (
        "data:\n  tls.key: |\n" + pem("EC PRIVATE KEY", b, indent="    ") + AFTER
    ),
    "go_raw_string": lambda b: (
        "const k = `" + pem("OPENSSH PRIVATE KEY", b).rstrip() + "`\n" + AFTER
    ),
    "python_list": lambda b: (
        'KEY = "\\n".join([\n'
        + "".join(f'    "{r}",\n' for r in pem("PRIVATE KEY", b).splitlines())
        + "])\n"
        + AFTER
    ),
    "crlf": lambda b: (
        "rem key\r\n" + pem("RSA PRIVATE KEY", b, "\r\n") + AFTER.replace("\n", "\r\n")
    ),
    "cr_only": lambda b: "' key\r" + pem("RSA PRIVATE KEY", b, "\r") + AFTER.replace("\n", "\r"),
    "encrypted_pem_headers": lambda b: (
        "k = '''\n"
        + pem("RSA PRIVATE KEY", ["Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,09AF", "", *b])
        + "'''"
        + AFTER
    ),
    "pgp_armour": lambda b: (
        "sig:\n"
        + pem("PGP PRIVATE KEY BLOCK", ["Version: GnuPG v2", "Comment: a key", "", *b, "=AbCd"])
        + AFTER
    ),
    "shell_comments": lambda b: "#!/bin/sh\n" + pem("PRIVATE KEY", b, indent="# ") + "echo hi\n",
    "c_line_comments": lambda b: pem("PRIVATE KEY", b, indent="// ") + "int main() {}\n",
    "one_line_concatenation": lambda b: (
        'k = "-----BEGIN PRIVATE KEY-----\\n" + "'
        + '\\n" + "'.join(b)
        + '\\n" + "-----END PRIVATE KEY-----"\n'
        + AFTER
    ),
    "two_keys": lambda b: (
        "a = 1\n" + pem("RSA PRIVATE KEY", b[:2]) + "middle = 1\n" + pem("PRIVATE KEY", b[2:])
    ),
    "unterminated": lambda b: "notes:\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(b) + "\n",
}


@pytest.mark.parametrize("shape", EMBEDDINGS)
def test_a_private_key_block_anywhere_is_redacted_with_its_lines_kept(shape: str) -> None:
    data = EMBEDDINGS[shape](B).encode()
    redacted = STRICT.redact(data)
    assert STRICT.skip_content(data) is None  # the file is kept, the rest searchable
    for line in B:
        assert line[:16].encode() not in redacted
    assert b"-----BEGIN" in redacted
    assert redacted.count(b"\n") == data.count(b"\n")
    assert redacted.count(b"\r") == data.count(b"\r")
    # What lies before the first block and after the last is as it was.
    assert redacted.partition(b"-----BEGIN")[0] == data.partition(b"-----BEGIN")[0]
    if b"-----END" in data:
        assert redacted.rpartition(b"-----END")[2] == data.rpartition(b"-----END")[2]
    assert ALLOWED.redact(data) == data


def test_a_body_line_reads_as_the_marker_between_the_markers() -> None:
    data = ('KEY = """\n' + pem("RSA PRIVATE KEY", B[:2]) + '"""\n').encode()
    assert STRICT.redact(data).decode().splitlines() == [
        'KEY = """',
        "-----BEGIN RSA PRIVATE KEY-----",
        "[redacted]",
        "[redacted]",
        "-----END RSA PRIVATE KEY-----",
        '"""',
    ]
    assert STRICT.redact(_json(B[:1]).encode()).decode().splitlines()[2] == (
        '  "private_key": "-----BEGIN PRIVATE KEY-----\\n[redacted]\\n-----END PRIVATE KEY-----\\n",'
    )


MENTIONS = [
    'MARKER = "-----BEGIN RSA PRIVATE KEY-----"\n\ndef parse(text):\n    return text\n',
    'BEGIN = "-----BEGIN RSA PRIVATE KEY-----"\nEND = "-----END RSA PRIVATE KEY-----"\nx = 1\n',
    'if line.startswith("-----BEGIN PRIVATE KEY-----"):\n    return True\n',
    'pem.replace("-----BEGIN RSA PRIVATE KEY-----", "").replace("-----END RSA PRIVATE KEY-----", "")\n',
    "A key starts with -----BEGIN RSA PRIVATE KEY----- and ends with -----END RSA PRIVATE KEY-----.\n",
    pem("CERTIFICATE", B),
    pem("PUBLIC KEY", B),
    pem("PGP PUBLIC KEY BLOCK", B),
]


@pytest.mark.parametrize("text", MENTIONS)
def test_mentions_of_the_marker_and_public_blocks_are_left_alone(text: str) -> None:
    data = ("x = 1\n" + text).encode()
    assert STRICT.redact(data) == data
    assert STRICT.skip_content(data) is None


@pytest.mark.parametrize(
    "head", ["", "\n\n", "  \t", "\ufeff"], ids=["bare", "blank_lines", "indented", "bom"]
)
def test_a_file_that_opens_with_a_key_is_a_key_under_any_name(head: str) -> None:
    data = (head + pem("OPENSSH PRIVATE KEY", B)).encode()
    assert STRICT.skip_content(data) is SkipReason.SECRET
    assert STRICT.skip_data(data) is SkipReason.SECRET
    assert ALLOWED.skip_content(data) is None


@given(st.text(st.characters(blacklist_categories=["Cs"])))
def test_data_without_a_begin_marker_is_returned_as_is(text: str) -> None:
    data = text.replace("-----BEGIN", "").encode()
    assert STRICT.redact(data) is data


@given(
    before=st.text(st.characters(blacklist_categories=["Cs"]), max_size=200),
    after=st.text(st.characters(blacklist_categories=["Cs"]), max_size=200),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    seed=st.integers(0, 1000),
)
def test_redaction_keeps_every_line_break_and_drops_every_body_line(
    before: str, after: str, eol: str, seed: int
) -> None:
    lines = body(seed)
    data = (before + eol + pem("PRIVATE KEY", lines, eol) + after).encode()
    redacted = STRICT.redact(data)
    assert [redacted.count(c) for c in (b"\n", b"\r")] == [data.count(c) for c in (b"\n", b"\r")]
    for line in lines:
        assert line.encode() not in redacted
    assert STRICT.redact(redacted) == redacted
