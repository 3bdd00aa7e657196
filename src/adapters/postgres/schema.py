"""Project workspaces as Postgres schemas, and the versioned migrations that build them."""

from __future__ import annotations

import hashlib
import re

from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.models import check_project_id

GLOBAL_SCHEMA = "codebase_mcp"
_PREFIX = "cb_proj_"
_MAX_IDENTIFIER = 63  # NAMEDATALEN - 1
_SLUG_DROP = re.compile(r"[^a-z0-9_]")


# The channel of the notifications of writes (adapters.postgres.changes).
CHANGES_CHANNEL = "codebase_mcp_changes"


def schema_name(project_id: str) -> str:
    """``cb_proj_<slug>_<8 hex>``: lowercase, at most 63 bytes, unique per project id.

    The id is validated first (``ValidationFailed`` naming the rule); the slug keeps only
    ``[a-z0-9_]`` of the lowercased id (``-`` and spaces become ``_``) and is truncated so the
    name fits; the hash of the exact id keeps ids that share a slug apart ("My App" vs "my-app").
    """
    pid = check_project_id(project_id)
    digest = hashlib.sha256(pid.encode("utf-8")).hexdigest()[:8]
    slug = _SLUG_DROP.sub("", pid.lower().replace("-", "_").replace(" ", "_"))
    room = _MAX_IDENTIFIER - len(_PREFIX) - 1 - len(digest)
    return f"{_PREFIX}{slug[:room]}_{digest}"


# Per-project migrations: (version, statement on the project's schema). Append only; never edit
# a released step. Each runs in the migration transaction with the project's advisory lock held.
MIGRATIONS: list[tuple[int, Statement]] = [
    (
        1,
        Statement("""
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE {s}.schema_migrations (
    version int PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
-- The embedding model and vector dimension of the project (one per project).
CREATE TABLE {s}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE {s}.repositories (
    id text PRIMARY KEY,
    name text NOT NULL,
    path text NOT NULL UNIQUE,
    embedding_model text,
    embedding_dimension int,
    indexed_at timestamptz
);
CREATE TABLE {s}.files (
    repo_id text NOT NULL REFERENCES {s}.repositories (id) ON DELETE CASCADE,
    path text COLLATE "C" NOT NULL,
    language text,
    content_hash text NOT NULL,
    size bigint NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (repo_id, path)
);
-- seq orders rows by insertion: ANN segments are partial HNSW indexes over seq ranges.
CREATE TABLE {s}.chunks (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL,
    repo_id text NOT NULL,
    file_path text COLLATE "C" NOT NULL,
    file_ext text NOT NULL,
    language text,
    symbol text,
    kind text,
    start_line int NOT NULL,
    end_line int NOT NULL,
    content text NOT NULL,
    content_hash text NOT NULL,
    token_count int NOT NULL,
    doc_len int NOT NULL,
    terms bigint[] NOT NULL,
    embedding vector
);
CREATE INDEX chunks_file ON {s}.chunks (repo_id, file_path);
-- Covers every search filter, so a filter is resolved from the index alone.
CREATE INDEX chunks_path ON {s}.chunks (file_path) INCLUDE (seq, repo_id, file_ext, language);
CREATE INDEX chunks_content ON {s}.chunks (content_hash);
-- BM25 postings: one row per (term, chunk), term = 64-bit hash of the analysed term.
CREATE TABLE {s}.postings (
    term bigint NOT NULL,
    chunk bigint NOT NULL,
    tf int NOT NULL,
    doc_len int NOT NULL
);
CREATE INDEX postings_term ON {s}.postings (term, chunk) INCLUDE (tf, doc_len);
-- Document statistics over the whole project (one row).
CREATE TABLE {s}.corpus_stats (
    one bool PRIMARY KEY DEFAULT true CHECK (one),
    n_docs bigint NOT NULL,
    total_len bigint NOT NULL,
    n_vectors bigint NOT NULL
);
INSERT INTO {s}.corpus_stats VALUES (true, 0, 0, 0);
-- Partial HNSW indexes, each over chunks with lo < seq <= hi.
CREATE TABLE {s}.ann_segments (
    index_name text PRIMARY KEY,
    lo bigint NOT NULL,
    hi bigint NOT NULL,
    m int NOT NULL,
    ef_construction int NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now()
);
-- A cache, so unlogged: lost after a crash, never wrong.
CREATE UNLOGGED TABLE {s}.embedding_cache (
    model text NOT NULL,
    content_hash text NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (model, content_hash)
);
CREATE TABLE {s}.tasks (
    id text PRIMARY KEY,
    title text NOT NULL,
    description text,
    notes text,
    status text NOT NULL,
    branches text[] NOT NULL,
    commits text[] NOT NULL,
    planning_references text[] NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    completed_at timestamptz
);
CREATE INDEX tasks_newest ON {s}.tasks (created_at DESC, id DESC);
CREATE INDEX tasks_branches ON {s}.tasks USING gin (branches);
"""),
    ),
    (
        2,
        # Counts kept by every write, so listing repositories (each semantic search checks
        # their models) does not count 100,000 chunks.
        Statement("""
ALTER TABLE {s}.repositories
    ADD COLUMN file_count bigint NOT NULL DEFAULT 0,
    ADD COLUMN chunk_count bigint NOT NULL DEFAULT 0;
UPDATE {s}.repositories r SET
    file_count = (SELECT count(*) FROM {s}.files f WHERE f.repo_id = r.id),
    chunk_count = (SELECT count(*) FROM {s}.chunks c WHERE c.repo_id = r.id);
"""),
    ),
    (
        3,
        # list_tasks filtered by status reads its page in order from an index, instead of
        # sorting every task of that status per call.
        Statement("""
CREATE INDEX tasks_status_newest ON {s}.tasks (status, created_at DESC, id DESC);
"""),
    ),
    (
        4,
        # A chunk row (content, a 384-d vector of 1.5 kB, term keys) is often just over the
        # default 2 kB TOAST target: every write then tried to compress the vector (floats do
        # not compress) and the content, a third of the cost of copying chunks in, for 1% less
        # space; and searches decompressed what they returned. Rows are now compressed only
        # past 8 kB (a page).
        Statement("""
ALTER TABLE {s}.chunks SET (toast_tuple_target = 8160);
"""),
    ),
    (
        5,
        # Bumped by every write that changes the chunk rows: what a filtered search counted
        # in one snapshot holds for every snapshot of the same generation (see PgChunkStore).
        Statement("""
ALTER TABLE {s}.corpus_stats ADD COLUMN generation bigint NOT NULL DEFAULT 0;
"""),
    ),
    (
        6,
        # No query filters, joins or sorts on these columns: ANALYZE (run after every large
        # load) no longer computes their statistics, the terms arrays and the contents above
        # all, which were most of its work. (embedding keeps its statistics: its null
        # fraction sizes "embedding IS NOT NULL".)
        Statement("""
ALTER TABLE {s}.chunks
    ALTER COLUMN id SET STATISTICS 0,
    ALTER COLUMN symbol SET STATISTICS 0,
    ALTER COLUMN kind SET STATISTICS 0,
    ALTER COLUMN start_line SET STATISTICS 0,
    ALTER COLUMN end_line SET STATISTICS 0,
    ALTER COLUMN content SET STATISTICS 0,
    ALTER COLUMN token_count SET STATISTICS 0,
    ALTER COLUMN doc_len SET STATISTICS 0,
    ALTER COLUMN terms SET STATISTICS 0;
ALTER TABLE {s}.postings
    ALTER COLUMN tf SET STATISTICS 0,
    ALTER COLUMN doc_len SET STATISTICS 0;
"""),
    ),
    (
        7,
        # Postings in blocks, one row per (term, file, language): the chunks of the file in
        # that language that hold the term (ascending; first = chunks[1]), their term
        # frequencies and document lengths.
        # A large load inserted one postings index entry per (term, chunk), most of the
        # database's work in a first index; now 2.4-3.2x fewer (see adapters.postgres.postings).
        Statement("""
CREATE TABLE {s}.postings_blocks (
    term bigint NOT NULL,
    first bigint NOT NULL,
    n int NOT NULL,
    chunks bigint[] NOT NULL,
    tfs int[] NOT NULL,
    doc_lens int[] NOT NULL
);
INSERT INTO {s}.postings_blocks (term, first, n, chunks, tfs, doc_lens)
SELECT p.term, min(p.chunk), count(*), array_agg(p.chunk ORDER BY p.chunk),
       array_agg(p.tf ORDER BY p.chunk), array_agg(p.doc_len ORDER BY p.chunk)
FROM {s}.postings p JOIN {s}.chunks c ON c.seq = p.chunk
GROUP BY p.term, c.repo_id, c.file_path, c.language
ORDER BY 1, 2;
DROP TABLE {s}.postings;
ALTER TABLE {s}.postings_blocks RENAME TO postings;
CREATE INDEX postings_term ON {s}.postings (term, first) INCLUDE (n);
ALTER TABLE {s}.postings
    ALTER COLUMN n SET STATISTICS 0,
    ALTER COLUMN chunks SET STATISTICS 0,
    ALTER COLUMN tfs SET STATISTICS 0,
    ALTER COLUMN doc_lens SET STATISTICS 0;
"""),
    ),
    (
        8,
        # The names a chunk's symbol holds (core.models.symbol_names, the same rule):
        # a search looks up the chunks that define a queried name through this index, not by
        # scanning. GIN: a merged chunk holds several names.
        Statement(r"""
CREATE FUNCTION {s}.symbol_names(symbol text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(n), '{{}}') FROM (
        SELECT regexp_replace(
                   regexp_replace(btrim(p), '(\(\))?[!?]*$', ''), '^.*(::|\.|->|\\|#)', ''
               ) AS n
        FROM unnest(string_to_array(symbol, ',')) AS p
    ) AS parts WHERE n <> ''
$$;
CREATE INDEX chunks_symbol_names ON {s}.chunks USING gin ({s}.symbol_names(symbol));
"""),
    ),
    (
        9,
        # The lines around each chunk in its file's indexed text, cut when the chunk is written:
        # a search reads its hits' context by chunk id (unique in a project: it hashes the
        # repository, path, lines and text) instead of whole file bodies. Beside the chunks,
        # not in them, so an exact vector scan does not read them. Chunks written before this
        # step have none (their context is cut from the file body when asked).
        Statement("""
CREATE TABLE {s}.chunk_context (
    chunk_id text PRIMARY KEY,
    before text NOT NULL,
    after text NOT NULL
);
"""),
    ),
    (
        10,
        # Every write of chunks, vectors or repositories tells the processes that keep what
        # they read of the project (adapters.postgres.changes), with the schema's name.
        # Statement triggers: a write of a thousand rows notifies once (Postgres also folds
        # equal notifications of one transaction).
        Statement(
            """
CREATE FUNCTION {s}.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{channel}', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON {s}.corpus_stats FOR EACH STATEMENT EXECUTE FUNCTION {s}.notify_change();
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON {s}.repositories FOR EACH STATEMENT EXECUTE FUNCTION {s}.notify_change();
""",
            channel=CHANGES_CHANNEL,
        ),
    ),
    (
        11,
        # The semantic layer is built after the lexical one: each repository counts its
        # chunks holding a vector, as it counts its chunks, so listing repositories tells how
        # far the layer is without counting rows.
        Statement("""
ALTER TABLE {s}.repositories ADD COLUMN vector_count bigint NOT NULL DEFAULT 0;
UPDATE {s}.repositories r SET vector_count = (
    SELECT count(*) FROM {s}.chunks c WHERE c.repo_id = r.id AND c.embedding IS NOT NULL);
"""),
    ),
    (
        12,
        # The chunks still waiting for a vector, in seq order: the semantic layer's next batch
        # and the ANN builds' first waiting chunk are read from it, not from a walk over the
        # chunks that have one (which grows as the layer fills).
        Statement("""
CREATE INDEX chunks_unvectored ON {s}.chunks (seq) INCLUDE (repo_id) WHERE embedding IS NULL;
"""),
    ),
    (
        13,
        # The lexical analyser's version of each repository's postings (core.lexical): rows
        # from before hold version 1's, and their next index run derives every file again.
        Statement("""
ALTER TABLE {s}.repositories ADD COLUMN analyser_version int NOT NULL DEFAULT 1;
"""),
    ),
    (
        14,
        # Packed postings (adapters.postgres.packed): the postings of each term common enough to
        # be costly in blocks, in one value, written by ``optimize`` (chunk_store.packing)
        # from one snapshot of the blocks. The writes since are logged beside them: the seq
        # ranges of chunks inserted, the seqs of chunks deleted (rows never change, so these
        # two correct a packed term exactly). Every write of this version counts itself in
        # ``logged`` as it moves the generation on: a write by a version that does not log
        # moves ``generation - logged`` and voids the build.
        Statement("""
ALTER TABLE {s}.corpus_stats ADD COLUMN logged bigint NOT NULL DEFAULT 0;
-- build: the id of the build's transaction (a process keeps its lengths by it); lengths:
-- the length of each chunk of its packed terms (packed.pack_lengths).
CREATE TABLE {s}.packed_build (
    one bool PRIMARY KEY DEFAULT true CHECK (one),
    build bigint NOT NULL,
    unlogged bigint NOT NULL,
    generation bigint NOT NULL,
    n_docs bigint NOT NULL,
    min_df int NOT NULL,
    terms int NOT NULL,
    postings bigint NOT NULL,
    lengths bytea NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE {s}.packed_terms (term bigint PRIMARY KEY, n int NOT NULL, data bytea NOT NULL);
-- Stored as is: the values are packed already, and pglz would cost every read its time.
ALTER TABLE {s}.packed_build ALTER COLUMN lengths SET STORAGE EXTERNAL;
ALTER TABLE {s}.packed_terms ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE {s}.packed_inserts (lo bigint NOT NULL, hi bigint NOT NULL, n int NOT NULL);
CREATE TABLE {s}.packed_gone (seq bigint NOT NULL);
"""),
    ),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
