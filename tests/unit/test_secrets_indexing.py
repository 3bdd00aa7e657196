"""End to end on real files: a repository holding credential files and embedded private keys
is indexed (both layers, the memory store, the hashing embedder) and no search, chunk or
stored text holds a secret; the code around an embedded key stays searchable at its lines.
``allow_secrets`` indexes them all, and turning it off again takes them back out."""

from __future__ import annotations

from pathlib import Path

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.core.models import IndexRequest, SearchQuery, SkipReason
from codebase_mcp_search.core.ports import Embedder
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS
from tests.unit.indexing_doubles import CHUNKER, TOKENS

EMB = HashingEmbedder(64, inline=False)
# The credential files of the issue, each holding one secret word of its own.
CREDENTIAL_FILES = [
    ".env",
    ".ssh/id_rsa",
    ".netrc",
    ".aws/credentials",
    "config/secrets.yaml",
    ".git-credentials",
    ".pgpass",
    ".envrc",
    "deploy/prod.env",
    ".docker/config.json",
    "ops/kubeconfig",
    ".kube/config",
    "web/.htpasswd",
    "infra/terraform.tfstate",
    "infra/terraform.tfstate.backup",
    "infra/prod.tfvars",
    "k8s/secret.yml",
    "gcp/service-account.json",
    "src/main/resources/application-prod.properties",
    "etc/shadow",
    "vpn/office.ovpn",
]
# Key bodies: base64 lines, and words a lexical search can look for.
KEY_LINES = ["zqxkeybodyone", "zqxkeybodytwo", "zqxkeybodythree=="]
KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END RSA PRIVATE KEY-----\n"
)
PADDING = "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(400))  # > 8 KiB
MODULE = (
    PADDING
    + 'TEST_KEY = """\n'
    + KEY
    + '"""\n\n\ndef still_searchable_after_key():\n    return TEST_KEY\n'
)
CREDENTIAL_WORDS = [f"zqx{i:02d}credential" for i in range(len(CREDENTIAL_FILES))]
SECRET_WORDS = CREDENTIAL_WORDS + KEY_LINES


def write_repo(root: Path) -> None:
    files = {
        rel: f"value = {word}\n"
        for rel, word in zip(CREDENTIAL_FILES, CREDENTIAL_WORDS, strict=True)
    }
    files["app/main.py"] = "def serve_requests():\n    return 'ok'\n"
    files["tests/fixtures.py"] = MODULE
    files["keys/backup.txt"] = KEY  # a key under another name
    files["service.json"] = (
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + "\\n".join(KEY_LINES)
        + '\\n-----END PRIVATE KEY-----\\n"}\n'
    )
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def _provider() -> Embedder:
    return EMB


async def index(root: Path, store: InMemoryChunkStore, **options: bool) -> dict[str, SkipReason]:
    """Both layers of ``root`` with a local tree of ``options``; what was skipped."""
    service = IndexingService(
        store, LocalSourceTree(**options), CHUNKER, TOKENS, EMB, chunking_pool=THREADS
    )
    result = await service.index(IndexRequest(root=str(root)))
    assert result.errors == []
    await service.build_vectors(IndexRequest(root=str(root)))
    return {s.path: s.reason for s in result.skipped}


async def stored_text(store: InMemoryChunkStore) -> str:
    """Every text the store holds: chunks and whole files."""
    (repo,) = await store.list_repositories()
    chunks = await store.chunks(repo.id)
    paths = sorted({c.file_path for c in chunks})
    files = await store.file_texts(repo.id, paths)
    return "\n".join([*(c.content for c in chunks), *files.values()])


async def found(store: InMemoryChunkStore, word: str) -> list[str]:
    """The hits of lexical and hybrid searches for ``word`` that hold it."""
    search = SearchService(store, _provider)
    hits = []
    for mode in ("lexical", "hybrid"):
        result = await search.search(SearchQuery.build(word, mode=mode))
        hits += [h.file_path for h in result.hits if word in h.content + h.context_after]
    return hits


async def test_no_secret_is_searchable_and_the_code_around_a_key_is(tmp_path: Path) -> None:
    write_repo(tmp_path)
    store = InMemoryChunkStore()
    skipped = await index(tmp_path, store)
    assert skipped == dict.fromkeys([*CREDENTIAL_FILES, "keys/backup.txt"], SkipReason.SECRET)
    text = await stored_text(store)
    for word in SECRET_WORDS:
        assert word not in text
        assert await found(store, word) == []
    # The module embedding a key is indexed whole but for it, at its own line numbers.
    search = SearchService(store, _provider)
    result = await search.search(SearchQuery.build("still_searchable_after_key", mode="lexical"))
    hit = result.hits[0]
    assert (hit.file_path, hit.symbol) == ("tests/fixtures.py", "still_searchable_after_key")
    lines = MODULE.splitlines()
    assert lines[hit.start_line - 1] == "def still_searchable_after_key():"
    assert await found(store, "serve_requests") == ["app/main.py", "app/main.py"]


async def test_allow_secrets_indexes_them_and_turning_it_off_takes_them_out(
    tmp_path: Path,
) -> None:
    write_repo(tmp_path)
    store = InMemoryChunkStore()
    await index(tmp_path, store)
    assert await index(tmp_path, store, allow_secrets=True) == {}
    text = await stored_text(store)
    assert all(word in text for word in SECRET_WORDS)
    assert await found(store, KEY_LINES[0])
    # Without the option again (no forced re-index): the files whose indexed text it changes
    # are read again, and the others dropped.
    await index(tmp_path, store)
    text = await stored_text(store)
    assert not [word for word in SECRET_WORDS if word in text]
