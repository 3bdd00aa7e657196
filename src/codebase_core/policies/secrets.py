"""What counts as a secret (``skipping`` leaves it out, or redacts it): credential files by
name or path, and private key blocks in any file's content.

- By name, without regard to case: environment files (``.env``, ``.env.*``, ``*.env``,
  ``.envrc``); keys, keystores and vaults (``*.pem``, ``*.key``, ``*.p8``, ``*.p12``,
  ``*.pfx``, ``*.pkcs12``, ``*.ppk``, ``*.jks``, ``*.jceks``, ``*.bks``, ``*.keystore``,
  ``*.keytab``, ``*.ovpn``, ``*.kdb``, ``*.kdbx``, ``*.keychain``); SSH keys (``id_rsa``,
  ``id_ed25519``, ``id_ecdsa``, ``id_dsa`` and their variants, ``*_rsa``,
  ``ssh_host_*_key``); login and token files (``.netrc``, ``_netrc``, ``.npmrc``,
  ``.pypirc``, ``.git-credentials``, ``.pgpass``, ``.my.cnf``, ``.boto``, ``.s3cfg``,
  ``.dockercfg``, ``.vault-token``, ``.terraformrc``, ``.databrickscfg``, ``.htpasswd``,
  ``shadow``, Azure token caches); credentials and secrets data (a file named
  ``credentials``; ``credentials``, ``secret`` or ``secrets`` with a prefix or suffix and a
  data extension such as ``.json``, ``.yaml``, ``.properties``: ``secret.yml``,
  ``prod-secrets.json``, ``application_default_credentials.json``; ``*.secret``;
  ``service-account*.json``); infrastructure state (``*.tfstate``, ``*.tfstate.backup``,
  ``*.tfvars``, ``kubeconfig``, ``*.kubeconfig``); production profiles of Spring
  (``application-prod.properties`` and the like); WireGuard configs (``wg0.conf``).
- By path: ``.kube/config``, ``.docker/config.json``, ``.config/gh/hosts.yml``,
  ``.config/hub``, and anything below a ``legacy_credentials`` directory (gcloud).
- Never their public halves and templates (``*.pub``, ``*.example``, ``*.sample``,
  ``*.template``, ``*.dist``, ``*.tpl``, ``*.tmpl``, or such a part inside the name, as in
  ``secrets.example.yaml``), nor code: a data extension is required
  where a name could be a module's (``secrets.py``, ``credentials.go``, ``kubeconfig.go``).
- By content: a private key block (``-----BEGIN ... PRIVATE KEY-----`` to its ``-----END``),
  wherever it is, as a PEM file writes it or as code and data embed it: a string per line
  (``"...\\n" +``), one line with escaped newlines (a JSON service account), indented (YAML),
  behind comment markers. A file that opens with one is a key (``opens_with_private_key``);
  elsewhere the block is redacted (``redact_private_keys``): each line of its body becomes
  ``REDACTED``, the quotes and escapes around it kept, so the file keeps its line numbers and
  the rest of it stays searchable. A marker only mentioned in code (a PEM parser's constant)
  is left alone: a block's body must look like one (base64, PEM and PGP headers, string
  glue), and a block without its ``-----END`` line ends at the first line that does not.
  ``*.asc`` files are not secrets by name (public keys, signatures): a PGP private key block
  in one is caught by content. Not caught by content: keys without a ``-----BEGIN`` line
  (ssh.com's ``---- BEGIN SSH2 ...``, PuTTY's format; ``*.ppk`` are skipped by name).
"""

from __future__ import annotations

import re

REDACTED = b"[redacted]"
"""What each line of a private key's body reads as, once redacted."""
# Public halves and templates of secret-looking names (.env.example, id_rsa.pub).
PUBLIC_SUFFIXES = (".pub", ".example", ".sample", ".template", ".dist", ".tpl", ".tmpl")

# Extensions of data, not code: a name that could be a module's counts only with one of these.
_DATA = r"(?:ya?ml|json|toml|ini|conf|cfg|properties|xml|txt|csv|env)"
_SECRET_NAME = re.compile(
    rf"""
    \.env(?:\..*)? | .*\.env | \.envrc
    | .*\.(?:pem|key|p8|p12|pfx|pkcs12|ppk|jks|jceks|bks|keystore|keytab|ovpn|kdbx?
          |keychain(?:-db)?)
    | id_(?:rsa|ed25519|ecdsa|dsa).* | .*_(?:rsa|dsa|ecdsa|ed25519) | ssh_host_.*_key
    | [._]netrc | \.npmrc | \.pypirc | \.git-credentials | \.pgpass | pgpass\.conf
    | \.my\.cnf | \.mylogin\.cnf | \.boto | \.s3cfg | \.dockercfg | \.vault-token
    | \.terraformrc | terraform\.rc | \.databrickscfg | \.?passwd-s3fs
    | \.?htpasswd | g?shadow-? | master\.passwd
    | accesstokens\.json | msal_token_cache\.(?:json|bin) | .*accesskeys\.csv
    | credentials | (?:.*[._-])?credentials(?:[._-].*)?\.{_DATA}
    | (?:.*[._-])?secrets?(?:[._-].*)?\.{_DATA} | .*\.secrets?
    | service[-_]?account.*\.json | keystore\.properties
    | .*\.tfstate(?:\.backup)? | .*\.tfvars(?:\.json)?
    | kubeconfig(?:[-_][\w-]*)?(?:\.ya?ml)? | .*\.kubeconfig
    | application-(?:prod|production|live|staging|stage|uat|preprod|secrets?)
      \.(?:properties|ya?ml)
    | wg\d+\.conf
    """,
    re.IGNORECASE | re.VERBOSE,
)
_SECRET_PATH = re.compile(
    r"(?:.*/)?(?:\.kube/config(?:[-_.][^/]*)?|\.docker/config\.json|\.config/gh/hosts\.ya?ml"
    r"|\.config/hub|legacy_credentials/.*)",
    re.IGNORECASE,
)

_BEGIN = b"-----BEGIN"
_BEGIN_KEY = re.compile(rb"-----BEGIN ([A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----")
# A file that opens with a key block (after a BOM and blank space) is a key, whatever its name.
_KEY_FILE = re.compile(
    rb"(?:\xef\xbb\xbf)?\s*-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
)
_EOL = re.compile(rb"\r\n?|\n")
# One line of a block (or its part beside a marker) is: what surrounds the key material in
# code and data (indentation, quotes, escaped newlines, concatenation, comment markers), the
# material, and what follows it. The material is what gets redacted. Every pattern here is
# linear (no nested repetition): a scan meets these lines in untrusted repositories.
_LEAD = re.compile(rb"(?:\\[nrt]|\\|//|\+(?=\s)|[\s\"'`,;(>#*])*")
_TRAIL = frozenset(b" \t\v\f\"'`,;)\\")
_SPACE = frozenset(b" \t\v\f")
_ESCAPED_EOL = re.compile(rb"\\[nrt]")
# Runs of base64 characters, and runs of anything else.
_RUNS = re.compile(rb"[A-Za-z0-9+/=]+|[^A-Za-z0-9+/=]+")
_TOKEN = re.compile(rb"=?[A-Za-z0-9+/]+={0,3}")
_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_GLUE = frozenset(b"\"'`,;\\")
# The headers of PEM (encrypted keys) and of PGP armour.
_HEADER = re.compile(rb"(?:Proc-Type|DEK-Info|Version|Comment|Charset|Hash|MessageID):(?:\s.*)?")


def secret_name(rel: str) -> bool:
    """Whether the file at ``rel`` (relative to the root) is named like a secret."""
    name = rel.rpartition("/")[2]
    # A public or template part anywhere after the stem: secrets.example.yaml, id_rsa.pub.
    if any("." + part in PUBLIC_SUFFIXES for part in name.lower().split(".")[1:]):
        return False
    return _SECRET_NAME.fullmatch(name) is not None or _SECRET_PATH.fullmatch(rel) is not None


def opens_with_private_key(data: bytes) -> bool:
    """Whether ``data`` opens with a ``-----BEGIN ... PRIVATE KEY-----`` line: a key file."""
    return _KEY_FILE.match(data) is not None


def redact_private_keys(data: bytes) -> bytes:
    """``data`` with the body of every private key block redacted, line breaks kept; ``data``
    itself when it holds none (a search for ``-----BEGIN``, then a regex only where it is)."""
    at = data.find(_BEGIN)
    if at == -1:
        return data
    out: list[bytes] = []
    copied = 0
    while at != -1:
        begin = _BEGIN_KEY.match(data, at)
        if begin is None:
            at = data.find(_BEGIN, at + len(_BEGIN))
            continue
        end_marker = b"-----END " + begin[1] + b"-----"
        pos = begin.end()
        while True:
            eol = _EOL.search(data, pos)
            line_end = eol.start() if eol else len(data)
            end = data.find(end_marker, pos, line_end)
            segment = data[pos : end if end != -1 else line_end]
            redacted = _redact_segment(segment)
            if redacted is not None and redacted != segment:
                out += (data[copied:pos], redacted)
                copied = pos + len(segment)
            if end != -1:
                pos = end + len(end_marker)
                break
            if redacted is None or eol is None:
                # Not a key's body (code after a mention of the marker), or the end of the data.
                pos = line_end
                break
            pos = eol.end()
        at = data.find(_BEGIN, pos)
    out.append(data[copied:])
    return b"".join(out)


def _redact_segment(segment: bytes) -> bytes | None:
    """One line of a block's body redacted (itself when it holds no material), or None when
    it does not look like part of a key."""
    lead = _LEAD.match(segment)
    assert lead is not None  # it matches the empty string
    start, end = lead.end(), _trail_start(segment, lead.end())
    if start == end:
        return segment
    for line in _ESCAPED_EOL.split(segment[start:end]):
        if not (_HEADER.fullmatch(line) or _key_material(line)):
            return None
    return segment[:start] + REDACTED + segment[end:]


def _trail_start(segment: bytes, lo: int) -> int:
    """Where the glue that ends ``segment`` (quotes, escaped newlines, `` +``) starts."""
    j = len(segment)
    while j > lo:
        c = segment[j - 1]
        if c in _TRAIL:
            j -= 1
        elif c == ord("+") and j - 2 >= lo and segment[j - 2] in _SPACE:
            j -= 1  # concatenation; a ``+`` next to base64 is a digit of it
        elif c in b"nrt" and j - 2 >= lo and segment[j - 2] == ord("\\"):
            j -= 2
        else:
            break
    return j


def _key_material(line: bytes) -> bool:
    """Base64 tokens, joined by glue (quotes, commas, backslashes, `` + ``); not words parted
    by blank space alone, as code and prose are."""
    for run in _RUNS.findall(line.strip()):
        if run[0] in _BASE64:
            if not _TOKEN.fullmatch(run):
                return False
        elif _GLUE.isdisjoint(run):
            return False
    return True
