"""Re-ranking a search's candidates the way a developer reads code.

The candidates come fused from the retrievals (``core.fusion``), best first. Scores
are first taken relative to the best candidate (1.0), so every boost below is in units of the
best retrieval score and means the same whatever the retrieval's scale. Then, in order:

1. **File coherence**: a file's best chunk gains ``coherence_boost`` times the file's summed
   candidate score over the best file's (a file with several strong chunks is about the query;
   with ``coherence_rest_share`` below 1, its best chunk's plus that share of the rest).
2. **Definitions**: a chunk that defines a queried name (``ranking.definitions``) gains
   ``definition_boost``, times ``stem_factor`` when its file is named after it; names written
   inside a sentence count ``embedded_factor`` of that. Definitions the retrievals missed
   (found by the store's symbol lookup) enter with this boost alone. For a bare name, a
   chunk defining it only as a member of something else (``defaultValidator.Engine``) gains
   ``member_factor`` of its boost while another defines it as a name of its own.
3. **Paths**: for a question in words, a chunk gains ``path_boost`` times the share of the
   query's words found in its file's name or folder (exactly, or one a prefix of the other),
   each word weighed by how few of the candidates' paths hold it (``json`` in a JSON library
   names nearly every file, ``parser`` one),
   and ``stem_boost`` when the file's whole name is one of the query's words (``Functor.scala``
   for "how the Functor type class defines mapping") or shortens one (``impls.rs`` for
   "implementations"): all of it for one of the question's first words, less for a later
   one (``ranking.naming``: a question names its subject first).
   **References**: for a short question in words, the files the best candidate file names
   in its candidate chunks (``Applicative.scala`` extends ``Apply``; ``parser.hpp`` includes
   ``lexer.hpp``) gain ``reference_boost``: how a part works is told by a file and the files
   it rests on.
4. **Priors** multiply the total: tests, examples, docs and prose, compatibility shims,
   vendored or generated copies, declaration stubs and re-export barrels rank below the source
   unless the query asks for that kind of file (an old version kept in a version folder beside
   a newer one, ``v3/`` beside ``v4/``, counts as a compatibility copy unless the query names
   it); a chunk with almost nothing in it ranks low. A chunk that carries no behaviour
   (``ranking.hollow``: a marker type, a bare class header, an import block) counts
   ``hollow_prior`` unless the query names it, after handing its score to its file's best
   working candidate when that is lower: the file keeps its place, shown by the code that
   does the work.
5. **Diversity**: taken best first, a file's first ``file_free_chunks`` chunks keep their
   score, the next counts ``file_decay`` of it, the next ``file_decay**2``..., so ten results
   cover more files. A file's best chunk keeps its score, so it never falls below another
   file's lesser chunk.

The final score is divided by the most a chunk can reach, so it stays in [0, 1]. Ties break on
path and start line, so ranking is deterministic.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from codebase_mcp_search.core.models import Chunk, ScoredChunk
from codebase_mcp_search.core.ranking import paths
from codebase_mcp_search.core.ranking.config import RankingConfig
from codebase_mcp_search.core.ranking.definitions import definition_gains
from codebase_mcp_search.core.ranking.hollow import HOLLOW_KINDS, is_hollow, named_by
from codebase_mcp_search.core.ranking.path_words import (
    files_path_matches,
    path_shares,
    path_word_weights,
    question_words,
    stem_boost_share,
    stem_gains,
)
from codebase_mcp_search.core.ranking.paths import FileRole
from codebase_mcp_search.core.ranking.query import (
    COMPAT_WORDS,
    DOC_WORDS,
    EXAMPLE_WORDS,
    GENERATED_WORDS,
    TEST_WORDS,
    QueryProfile,
)

_NOT_WORD_BYTES = bytes(b for b in range(128) if not (chr(b).isalnum() or chr(b) == "_"))
# Fewer letters, digits and underscores than this: nothing to read.
_TRIVIAL_WORD_CHARS = 16
_FileKey = tuple[str, str]


# A search's candidates are mostly the chunks of the last searches (the same text objects,
# whose hashes Python keeps): their verdicts are remembered, a few thousand texts at most.
@functools.lru_cache(maxsize=8_192)
def is_trivial(content: str) -> bool:
    """A chunk with almost nothing to read: a lone heading or anchor, a closing brace."""
    # Word characters counted as bytes: ASCII letters, digits and ``_``, and every byte of a
    # non-ASCII character (a C-speed deletion of the rest). The beginning decides for nearly
    # every chunk; the whole text only for a sparse one.
    head = content[:256].encode("utf-8", "surrogatepass").translate(None, _NOT_WORD_BYTES)
    if len(head) >= _TRIVIAL_WORD_CHARS or len(content) <= 256:
        return len(head) < _TRIVIAL_WORD_CHARS
    whole = content.encode("utf-8", "surrogatepass").translate(None, _NOT_WORD_BYTES)
    return len(whole) < _TRIVIAL_WORD_CHARS


def role_factors(profile: QueryProfile, config: RankingConfig) -> dict[FileRole, float]:
    """The prior of each kind of file for this query (1.0 for source, or a kind asked for)."""

    def unless_asked(words: frozenset[str], factor: float) -> float:
        return 1.0 if profile.asks_for(words) else factor

    return {
        FileRole.SOURCE: 1.0,
        FileRole.TEST: unless_asked(TEST_WORDS, config.test_prior),
        FileRole.EXAMPLE: unless_asked(EXAMPLE_WORDS, config.example_prior),
        FileRole.DOC: unless_asked(DOC_WORDS, config.doc_prior),
        FileRole.COMPAT: unless_asked(COMPAT_WORDS, config.compat_prior),
        FileRole.GENERATED: unless_asked(GENERATED_WORDS, config.generated_prior),
        FileRole.STUB: config.stub_prior,
        FileRole.BARREL: config.barrel_prior,
    }


def _prior(chunk: Chunk, factors: Mapping[FileRole, float], trivial_prior: float) -> float:
    """The multiplier for the kind of file ``chunk`` is in (``factors``: ``role_factors``)."""
    factor = factors[paths.file_role(chunk.file_path, chunk.content)]
    return factor * trivial_prior if is_trivial(chunk.content) else factor


def hand_over(
    chunks: Mapping[str, Chunk],
    raw: dict[str, float],
    factor: dict[str, float],
    hollow: Mapping[str, bool],
    prior: float,
) -> None:
    """Chunks of ``hollow`` (id: whether it is an import block) count ``prior`` of their
    score, after each file's best working candidate took its file's best hollow score when
    that is higher: the file keeps its place, shown by the code that does the work. An import
    block with no working candidate in its file keeps its score: it may be a re-export file
    that is the answer. In place: ``raw`` (before priors) and ``factor`` (the priors)."""
    best_hollow: dict[_FileKey, float] = {}
    best_work: dict[_FileKey, str] = {}
    for cid in sorted(chunks):
        c = chunks[cid]
        k = (c.repository_id, c.file_path)
        final = raw[cid] * factor[cid]
        if cid in hollow:
            best_hollow[k] = max(best_hollow.get(k, 0.0), final)
        elif is_trivial(c.content):
            continue  # nothing to read: no stand-in for its file
        elif k not in best_work or final > raw[best_work[k]] * factor[best_work[k]]:
            best_work[k] = cid
    for k, score in best_hollow.items():
        w = best_work.get(k)
        if w is not None and score > raw[w] * factor[w]:
            raw[w] = score / factor[w]
    for cid, imports in hollow.items():
        c = chunks[cid]
        if not imports or (c.repository_id, c.file_path) in best_work:
            factor[cid] *= prior


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# Stems naming a folder's entry or a package, not a subject: most files mention ``mod``.
_ENTRY_STEMS = frozenset({"mod", "index", "init", "packageinfo", "lib", "main"})


@functools.lru_cache(maxsize=2_048)
def _names_in(content: str) -> frozenset[str]:
    """The identifiers of ``content``, normalised as ``paths.normalise_name`` (each distinct
    word once; remembered for the texts of the last searches' best files)."""
    return frozenset(paths.normalise_name(w) for w in set(_IDENTIFIER.findall(content)))


def referenced_files(chunks: Collection[Chunk], scores: Mapping[str, float]) -> set[str]:
    """The files of ``chunks`` that the best one's file (by its best chunk's ``scores``, ties
    by path) names in its chunks among ``chunks``: one of the file's stem names (three
    letters or more, not an entry's ``mod`` or ``index``) is a word of them, normalised as
    ``paths.normalise_name`` (``Apply`` -> ``Apply.scala``, ``./rootConfig`` ->
    ``rootConfig.ts``, ``lexer.hpp``)."""
    by_file: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_file[c.file_path].append(c)
    if not by_file:
        return set()
    top = min(by_file, key=lambda f: (-max(scores[c.id] for c in by_file[f]), f))
    words: set[str] = set().union(*(_names_in(c.content) for c in by_file[top]))
    return {
        f
        for f in by_file
        if f != top
        and any(len(n) >= 3 and n not in _ENTRY_STEMS and n in words for n in paths.stem_names(f))
    }


def ceiling(config: RankingConfig) -> float:
    """The most a chunk can score before normalising."""
    return (
        1.0
        + config.coherence_boost
        + config.definition_boost * config.stem_factor
        + config.path_boost
        + config.stem_boost
        + config.reference_boost
    )


def _diversified(
    scored: list[tuple[float, Chunk]], decay: float, free: int
) -> list[tuple[float, Chunk]]:
    # Sorted on plain tuples (best first, then path and line; the position last keeps a
    # stable sort's order for the rest and never compares chunks).
    ordered = sorted(
        (-score, c.file_path, c.start_line, i, c) for i, (score, c) in enumerate(scored)
    )
    seen: dict[_FileKey, int] = defaultdict(int)
    out: list[tuple[float, str, int, int, Chunk]] = []
    for i, (neg, path, line, _, c) in enumerate(ordered):
        k = (c.repository_id, path)
        n = seen[k]
        seen[k] = n + 1
        out.append((neg if n < free else neg * decay ** (n - free + 1), path, line, i, c))
    out.sort()
    return [(-neg, c) for neg, _, _, _, c in out]


def diversify(scored: Sequence[ScoredChunk], decay: float, free: int = 1) -> list[ScoredChunk]:
    """Best first; a file's n-th chunk (from 0) scaled by ``decay**(n - free + 1)`` once
    ``n >= free``, then sorted again."""
    items = _diversified([(s.score, s.chunk) for s in scored], decay, free)
    return [ScoredChunk(c, score) for score, c in items]


def rerank(
    candidates: Sequence[ScoredChunk],
    profile: QueryProfile,
    config: RankingConfig,
    definitions: Sequence[Chunk] = (),
) -> list[ScoredChunk]:
    """``candidates`` (fused, any order) and ``definitions`` (chunks defining a queried name,
    from the store's lookup) ordered as the module docstring says, scores in [0, 1]."""
    top = max((s.score for s in candidates), default=0.0)
    chunks: dict[str, Chunk] = {}
    base: dict[str, float] = {}
    for s in candidates:
        chunks[s.chunk.id] = s.chunk
        base[s.chunk.id] = s.score / top if top > 0 else 0.0
    for c in definitions:
        if c.id not in chunks:
            chunks[c.id] = c
            base[c.id] = 0.0
    if not chunks:
        return []
    gain: dict[str, float] = dict.fromkeys(chunks, 0.0)
    if config.coherence_boost > 0:
        file_sum: dict[_FileKey, float] = defaultdict(float)
        best: dict[_FileKey, str] = {}
        # In file order, whatever the candidates' order: sums round alike, and a tie for a
        # file's best goes to its earlier chunk.
        in_order = sorted(
            (c.repository_id, c.file_path, c.start_line, c.id, c) for c in chunks.values()
        )
        for repo, path, _, cid, _ in in_order:
            k = (repo, path)
            score = base[cid]
            file_sum[k] += score
            if k not in best or score > base[best[k]]:
                best[k] = cid
        # A file's evidence: its best chunk plus a share of the rest.
        share = config.coherence_rest_share
        evidence = (
            file_sum
            if share == 1.0
            else {k: base[cid] + share * (file_sum[k] - base[cid]) for k, cid in best.items()}
        )
        most = max(evidence.values())
        if most > 0:
            for k, cid in best.items():
                gain[cid] += config.coherence_boost * evidence[k] / most
    # Per file: what its path adds (words of the query in it, a name the query says).
    path_gain: dict[str, float] = {}
    files = {c.file_path for c in chunks.values()}
    if config.path_boost > 0 and not profile.is_symbol:
        # Each file's path compared with the query's words once, for weights and path_gain.
        matches = files_path_matches(profile, files)
        weights = path_word_weights(profile, files, config.path_word_floor, matches)
        path_gain = {
            f: config.path_boost * share
            for f, share in path_shares(profile, weights, matches).items()
        }
    if config.stem_boost > 0 and not profile.is_symbol:
        for f, g in stem_gains(profile, config, files).items():
            path_gain[f] = path_gain.get(f, 0.0) + g
    if profile.names and config.definition_boost > 0:
        for cid, g in definition_gains(chunks, profile, config).items():
            gain[cid] += g
    bound = ceiling(config)
    factors = role_factors(profile, config)
    trivial = config.trivial_prior
    # An old version beside the current one counts as a compatibility copy.
    older: set[str] = set()
    if config.priors and config.older_versions and factors[FileRole.COMPAT] < 1.0:
        older = paths.superseded(files, {t.lower() for t in profile.tokens})
    compat = factors[FileRole.COMPAT]
    if config.priors:
        factor = {cid: _prior(c, factors, trivial) for cid, c in chunks.items()}
    else:
        factor = dict.fromkeys(chunks, 1.0)
    raw = {
        cid: base[cid] + gain[cid] + path_gain.get(c.file_path, 0.0) for cid, c in chunks.items()
    }
    if config.priors and config.hollow_prior < 1.0:
        said = frozenset(paths.normalise_name(t) for t in (*profile.tokens, *profile.names))
        hollow = {
            cid: c.kind == "module"
            for cid, c in chunks.items()
            if c.kind in HOLLOW_KINDS
            and is_hollow(c)
            and not is_trivial(c.content)
            and not named_by(c, said)
        }
        hand_over(chunks, raw, factor, hollow, config.hollow_prior)
    n_words = question_words(profile)
    if (
        config.reference_boost > 0
        and not profile.is_symbol
        and (config.reference_max_words <= 0 or n_words <= config.reference_max_words)
    ):
        provisional = {
            cid: raw[cid] * factor[cid] * (compat if c.file_path in older else 1.0)
            for cid, c in chunks.items()
        }
        named = referenced_files(chunks.values(), provisional)
        add = config.reference_boost * stem_boost_share(profile, config.reference_words)
        for cid, c in chunks.items():
            if c.file_path in named:
                raw[cid] += add
    # (A factor of 1.0 is exact: left out for the files that are no old version.)
    scored = [
        (
            (raw[cid] * factor[cid] * compat if c.file_path in older else raw[cid] * factor[cid])
            / bound,
            c,
        )
        for cid, c in chunks.items()
    ]
    return [
        ScoredChunk(c, min(1.0, max(0.0, score)))
        for score, c in _diversified(scored, config.file_decay, config.file_free_chunks)
    ]
