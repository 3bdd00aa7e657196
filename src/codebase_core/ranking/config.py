"""The ranking stack's knobs. Defaults come from ``core.defaults`` and were measured on the
repository benchmark, CoSQA and the own eval (``bench/repo_search.py``; bench/README.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from codebase_mcp_search.core import defaults


class RankingConfig(BaseModel):
    """How ``rerank`` orders the candidates of a search (see ``core.ranking``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    # Fusion weights (semantic, lexical) for a symbol query: a name is found by its letters.
    query_type_weights: bool = True
    symbol_semantic_weight: float = Field(default=defaults.RANK_SYMBOL_SEMANTIC_WEIGHT, ge=0.0)
    symbol_lexical_weight: float = Field(default=defaults.RANK_SYMBOL_LEXICAL_WEIGHT, ge=0.0)
    # The fusion's lexical weight for a question in words that names code (``how does
    # JsonReader handle lenient mode``, ``z.transform and z.pipe``): the names are found by
    # their letters, as a symbol query's are. None: the fusion's own.
    named_lexical_weight: float | None = Field(default=defaults.RANK_NAMED_LEXICAL_WEIGHT, gt=0.0)
    # Added, in units of the best candidate's score, to a chunk defining a queried name; times
    # ``stem_factor`` when its file is named after it. Names inside a sentence get
    # ``embedded_factor`` of it.
    definition_boost: float = Field(default=defaults.RANK_DEFINITION_BOOST, ge=0.0)
    stem_factor: float = Field(default=defaults.RANK_STEM_FACTOR, ge=1.0)
    embedded_factor: float = Field(default=defaults.RANK_EMBEDDED_FACTOR, ge=0.0)
    # Times the definition boost of a chunk that defines the queried bare name only as a
    # member (``defaultValidator.Engine`` for "Engine") when another chunk defines it as a
    # name of its own: a bare name asks for the thing itself first (1.0: alike).
    member_factor: float = Field(default=defaults.RANK_MEMBER_FACTOR, ge=0.0, le=1.0)
    # Look the queried names up among every chunk's symbols, not only the candidates.
    definition_lookup: bool = True
    # Added, times the share of query words found in the file's name or folder.
    path_boost: float = Field(default=defaults.RANK_PATH_BOOST, ge=0.0)
    # A query word weighs in that share by its specificity among the candidates' paths, at
    # least this much (1.0: every word alike); see ``path_words.path_word_weights``.
    path_word_floor: float = Field(default=defaults.RANK_PATH_WORD_FLOOR, ge=0.0, le=1.0)
    # Up to ``path_files`` files whose path holds at least ``path_file_share`` of the
    # question's words (weighed as above, over all the repository's paths) join the lexical
    # candidates with their best chunk by BM25 (``services.search.path_files``). 0: none.
    path_files: int = Field(default=defaults.RANK_PATH_FILES, ge=0)
    path_file_share: float = Field(default=defaults.RANK_PATH_FILE_SHARE, ge=0.0, le=1.0)
    # Added when the file's whole name is one of the words of a question in words
    # (``Functor.scala`` for "how the Functor type class ...", ``parser.hpp`` for "JSON parser
    # and tokenizer"). With ``stem_boost_position`` 0: fully for a question of at most
    # ``stem_boost_words`` words (of three letters or more), ``stem_boost_words / words`` of
    # it for a longer one (0: always fully).
    stem_boost: float = Field(default=defaults.RANK_STEM_BOOST, ge=0.0)
    stem_boost_words: int = Field(default=defaults.RANK_STEM_BOOST_WORDS, ge=0)
    # When above 0, the stem boost goes by the position of the word the file is named after
    # instead of the question's length: all of it for the question's first
    # ``stem_boost_position`` content words, ``k / (position + 1)`` after (``ranking.naming``:
    # a question names its subject first).
    stem_boost_position: int = Field(default=defaults.RANK_STEM_BOOST_POSITION, ge=0)
    # When above 0, a file stem of at least this many letters that begins a longer query word
    # is named after it too (``impls`` for "implementations", ``utils`` for "utility").
    stem_abbreviation: int = Field(default=defaults.RANK_STEM_ABBREVIATION, ge=0)
    # Added to a file's best chunk, times its file's summed candidate score over the best file's.
    coherence_boost: float = Field(default=defaults.RANK_COHERENCE_BOOST, ge=0.0)
    # A file's evidence for that: its best chunk's score plus this share of its other
    # chunks' (1.0: the sum of all).
    coherence_rest_share: float = Field(default=defaults.RANK_COHERENCE_REST_SHARE, ge=0.0, le=1.0)
    # Multipliers for files that are not the source a code question wants (see ranking.paths).
    priors: bool = True
    test_prior: float = Field(default=defaults.RANK_TEST_PRIOR, gt=0.0, le=1.0)
    example_prior: float = Field(default=defaults.RANK_EXAMPLE_PRIOR, gt=0.0, le=1.0)
    doc_prior: float = Field(default=defaults.RANK_DOC_PRIOR, gt=0.0, le=1.0)
    compat_prior: float = Field(default=defaults.RANK_COMPAT_PRIOR, gt=0.0, le=1.0)
    generated_prior: float = Field(default=defaults.RANK_GENERATED_PRIOR, gt=0.0, le=1.0)
    stub_prior: float = Field(default=defaults.RANK_STUB_PRIOR, gt=0.0, le=1.0)
    barrel_prior: float = Field(default=defaults.RANK_BARREL_PRIOR, gt=0.0, le=1.0)
    # Files under a version folder older than another candidate's (``v3/`` beside ``v4/``)
    # get ``compat_prior`` (``paths.superseded``).
    older_versions: bool = True
    # Added to each candidate file that the best candidate file names in its candidate chunks
    # (an import, a base type, a call: ``Applicative.scala`` extends ``Apply``), for a question
    # in words of at most ``reference_max_words`` words (0: any length), all of it up to
    # ``reference_words`` words and ``reference_words / words`` beyond (0: always all). A
    # question about how a part works is answered by a file and the files it rests on; a long
    # one describes one function. See ``rerank.referenced_files``. 0: off.
    reference_boost: float = Field(default=defaults.RANK_REFERENCE_BOOST, ge=0.0)
    reference_max_words: int = Field(default=defaults.RANK_REFERENCE_MAX_WORDS, ge=0)
    reference_words: int = Field(default=defaults.RANK_REFERENCE_WORDS, ge=0)
    # A chunk with almost nothing in it (a lone heading, an anchor, a closing brace).
    trivial_prior: float = Field(default=defaults.RANK_TRIVIAL_PRIOR, gt=0.0, le=1.0)
    # A chunk that carries no behaviour (a marker or one-line type, a bare type header, an
    # import block or re-export file) unless the query names it (``ranking.hollow``).
    hollow_prior: float = Field(default=defaults.RANK_HOLLOW_PRIOR, gt=0.0, le=1.0)
    # A file's chunks after its first ``file_free_chunks`` count this much, then this
    # squared, ...
    file_decay: float = Field(default=defaults.RANK_FILE_DECAY, gt=0.0, le=1.0)
    file_free_chunks: int = Field(default=defaults.RANK_FILE_FREE_CHUNKS, ge=1)
