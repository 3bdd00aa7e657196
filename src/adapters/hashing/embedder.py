"""HashingEmbedder: feature hashing of code tokens into a fixed-size vector (no model).

A text's features are its analysed terms (``core.lexical.analyse``) and the bigrams of
consecutive terms (``"a b"``). Each feature adds ``sign * (1 + ln(tf))`` to one slot, slot and
sign taken from its blake2b digest; the vector is then L2-normalised.

A batch is computed with numpy, bit for bit as the scalar definition computes it in float64:
every slot receives its features' weights in the same order (terms by first occurrence, then
bigrams by first occurrence), the squared norm is summed slot by slot from the first, and
``1 + ln(tf)`` comes from ``math.log``.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
from collections import Counter
from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from codebase_mcp_search.core import defaults, lexical
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import Embeddings

_Ints = npt.NDArray[np.int64]
_Floats = npt.NDArray[np.float64]
_NONE: _Ints = np.zeros(0, dtype=np.int64)

# Known terms and bigrams are remembered with their codes; past these sizes both tables start
# afresh (some 60 MiB in all), so a long-lived process does not grow without bound.
_MAX_TERMS = 1 << 17
_MAX_BIGRAMS = 1 << 21
# New bigrams join a small sorted table, merged into the large one past this size: adding a few
# bigrams per call then costs little, however many are known.
_RECENT_BIGRAMS = 1 << 14
# _WEIGHTS[tf] == 1 + math.log(tf): numpy's log may differ from libm's in the last bit.
_WEIGHTS = np.array([0.0, *(1.0 + math.log(tf) for tf in range(1, 4096))])
# Texts embedded together: enough to amortise numpy's per-call costs, few enough for the
# arrays to stay in cache.
_SLICE = 512
# A query of at most this many terms is embedded in plain Python (``_scalar``): for a few
# features numpy's per-call costs were most of a search's embedding time.
_SCALAR_TERMS = 64


def _codes(features: list[bytes], dimension: int) -> _Ints:
    """``2 * slot + (1 if the sign is + else 0)`` of each feature (UTF-8)."""
    # blake2b, not hash(): the same text must map to the same vector in every process. The
    # slot is the digest's first 4 bytes (little-endian) modulo the dimension; the sign is the
    # lowest bit of its fifth byte.
    blake2b = hashlib.blake2b
    digests = np.frombuffer(
        b"".join([blake2b(f, digest_size=8).digest() for f in features]), dtype=np.uint8
    ).reshape(-1, 8)
    slots = np.ascontiguousarray(digests[:, :4]).view("<u4").reshape(-1) % dimension
    return slots.astype(np.int64) * 2 + (digests[:, 4] & 1)


class HashingEmbedder:
    """Signed feature hashing of analysed code tokens and token bigrams; deterministic.

    It captures shared vocabulary, not meaning: it exists for tests and as an explicit opt-in
    (``CODEBASE_MCP_EMBEDDER=hash``), and is never chosen automatically as "semantic".
    Its vectors cost less than writing them, so by default an indexing run embeds with it
    as it writes (``inline``, see ``ports.embeds_inline``); ``inline=False`` leaves them to
    the semantic layer, as a model's are.
    """

    def __init__(self, dimension: int = defaults.HASH_DIMENSION, *, inline: bool = True) -> None:
        if dimension < 8:
            raise ValidationFailed("dimension", dimension, "must be at least 8")
        self._dimension = dimension
        self.inline = inline
        self._lock = threading.Lock()
        self._term_ids: dict[str, int] = {}
        self._terms: list[bytes] = []  # UTF-8, by id
        self._term_codes = _NONE  # by term id; its tail is spare room
        self._bigrams = _BigramCodes()
        self._scratch: _Floats = np.empty(0)

    @property
    def model(self) -> str:
        return f"hash-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        return Embeddings(vectors=self._vectors(texts))

    async def embed_query(self, text: str) -> list[float]:
        terms = lexical.analysed(text)
        if len(terms) <= _SCALAR_TERMS:
            return _scalar(terms, self._dimension)
        return [float(x) for x in self._vectors([text])[0]]

    def _vectors(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """One read-only float64 row per text (see ``Embeddings``)."""
        with self._lock:
            out: list[Sequence[float]] = []
            for i in range(0, len(texts), _SLICE):
                matrix = self._slice(texts[i : i + _SLICE]).copy()
                matrix.flags.writeable = False
                out.extend(cast("list[Sequence[float]]", list(matrix)))
            return out

    def _slice(self, texts: Sequence[str]) -> _Floats:
        """The vectors of ``texts`` as the rows of a matrix in a buffer the next call reuses."""
        n, dim = len(texts), self._dimension
        analysed = [lexical.analysed(t) for t in texts]
        lengths = np.fromiter(map(len, analysed), dtype=np.int64, count=n)
        terms = list(itertools.chain.from_iterable(analysed))
        ids = self._term_ids_of(terms)
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # Bigrams: consecutive terms of the same text.
        same_doc = np.ones(max(len(terms) - 1, 0), dtype=bool)
        ends = np.cumsum(lengths)
        same_doc[ends[(ends > 0) & (ends < len(terms))] - 1] = False
        pairs = (ids[:-1][same_doc] << 32) | ids[1:][same_doc]
        distinct, bigram = np.unique(pairs, return_inverse=True)
        # Fresh pages cost more than the arithmetic here: the matrices reuse one buffer.
        if len(self._scratch) < 2 * n * dim:
            self._scratch = np.empty(2 * _SLICE * dim)
        matrix = self._scratch[: n * dim]
        matrix.fill(0.0)
        # Terms, then bigrams: each slot receives its features' weights in the definition's order.
        self._add(matrix, doc, ids, self._term_codes[ids])
        self._add(matrix, doc[:-1][same_doc], bigram, self._bigram_codes(distinct)[bigram])
        matrix = matrix.reshape(n, dim)
        squares = np.square(matrix, out=self._scratch[n * dim : 2 * n * dim].reshape(n, dim))
        np.cumsum(squares, axis=1, out=squares)
        norms = np.sqrt(squares[:, -1])
        matrix /= np.where(norms > 0, norms, 1.0)[:, None]
        return matrix

    def _add(self, matrix: _Floats, doc: _Ints, feature: _Ints, code: _Ints) -> None:
        """Add ``sign * (1 + ln(tf))`` of every (text, feature) occurring to its slot of ``matrix``
        (texts by rows of ``dimension``), features in order of first occurrence."""
        first, tf = _first_occurrences((doc << 32) | feature)
        code = code[first]
        if len(tf) and tf.max() >= len(_WEIGHTS):
            weight = np.array([1.0 + math.log(n) for n in tf.tolist()])
        else:
            weight = _WEIGHTS[tf]
        slots = doc[first] * self._dimension + (code >> 1)
        # add.at adds in the order given, also into the same slot.
        np.add.at(matrix, slots, np.where(code & 1 == 1, weight, -weight))

    def _term_ids_of(self, terms: list[str]) -> _Ints:
        """Ids of ``terms``; new terms are numbered and their codes computed."""
        if len(self._bigrams) > _MAX_BIGRAMS:
            self._forget()
        try:
            return self._known_term_ids(terms)
        except KeyError:
            pass
        new = set(terms).difference(self._term_ids)
        if len(self._terms) + len(new) > _MAX_TERMS:
            self._forget()
            new = set(terms)
        added = sorted(new)
        start, end = len(self._terms), len(self._terms) + len(added)
        self._term_ids.update(zip(added, range(start, end), strict=True))
        encoded = [t.encode("utf-8") for t in added]
        self._terms.extend(encoded)
        if end > len(self._term_codes):
            grown = np.zeros(max(end, 2 * len(self._term_codes), 1024), dtype=np.int64)
            grown[:start] = self._term_codes[:start]
            self._term_codes = grown
        self._term_codes[start:end] = _codes(encoded, self._dimension)
        return self._known_term_ids(terms)

    def _known_term_ids(self, terms: list[str]) -> _Ints:
        return np.fromiter(map(self._term_ids.__getitem__, terms), dtype=np.int64, count=len(terms))

    def _bigram_codes(self, pairs: _Ints) -> _Ints:
        """Codes of distinct bigrams, sorted and given as ``first term id << 32 | second``."""
        codes = self._bigrams.get(pairs)
        missing = np.flatnonzero(codes < 0)
        if len(missing):
            terms, new = self._terms, pairs[missing]
            codes[missing] = _codes(
                [terms[p >> 32] + b" " + terms[p & 0xFFFFFFFF] for p in new.tolist()],
                self._dimension,
            )
            self._bigrams.add(new, codes[missing])
        return codes

    def _forget(self) -> None:
        self._term_ids, self._terms, self._term_codes = {}, [], _NONE
        self._bigrams = _BigramCodes()


def _scalar(terms: Sequence[str], dimension: int) -> list[float]:
    """The vector of one text's ``terms``, as the module docstring defines it, in plain
    Python: features by first occurrence (terms, then bigrams), the squared norm summed slot
    by slot from the first, as the batched computation does, so both give the same bits."""
    features = Counter(terms)
    features.update(f"{a} {b}" for a, b in itertools.pairwise(terms))
    vec = [0.0] * dimension
    blake2b = hashlib.blake2b
    for feature, tf in features.items():
        digest = blake2b(feature.encode("utf-8"), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dimension
        weight = 1.0 + math.log(tf)
        vec[slot] += weight if digest[4] & 1 else -weight
    squares = 0.0
    for v in vec:
        squares += v * v
    norm = math.sqrt(squares)
    return [v / norm for v in vec] if norm > 0 else vec


def _first_occurrences(keys: _Ints) -> tuple[_Ints, _Ints]:
    """Positions of the first occurrence of each distinct key, ascending, and its count."""
    if len(keys) == 0:
        return keys, keys
    order = np.argsort(keys)
    ordered = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    counts = np.zeros(len(keys), dtype=np.int64)
    counts[np.minimum.reduceat(order, starts)] = np.diff(np.append(starts, len(keys)))
    first = np.flatnonzero(counts)
    return first, counts[first]


class _BigramCodes:
    """Codes of known bigrams by key, in a large and a small sorted table (see _RECENT_BIGRAMS)."""

    def __init__(self) -> None:
        self._keys = self._codes = self._recent_keys = self._recent_codes = _NONE

    def __len__(self) -> int:
        return len(self._keys) + len(self._recent_keys)

    def get(self, keys: _Ints) -> _Ints:
        """The code of each of ``keys``, -1 where unknown."""
        codes = np.full(len(keys), -1, dtype=np.int64)
        unknown = np.arange(len(keys))
        for known, values in ((self._keys, self._codes), (self._recent_keys, self._recent_codes)):
            if len(known) and len(unknown):
                at = np.minimum(np.searchsorted(known, keys[unknown]), len(known) - 1)
                hit = known[at] == keys[unknown]
                codes[unknown[hit]] = values[at[hit]]
                unknown = unknown[~hit]
        return codes

    def add(self, keys: _Ints, codes: _Ints) -> None:
        """Remember new ``keys`` (sorted, distinct, unknown) with their codes."""
        self._recent_keys, self._recent_codes = _merged(
            self._recent_keys, self._recent_codes, keys, codes
        )
        if len(self._recent_keys) > _RECENT_BIGRAMS:
            self._keys, self._codes = _merged(
                self._keys, self._codes, self._recent_keys, self._recent_codes
            )
            self._recent_keys = self._recent_codes = _NONE


def _merged(keys: _Ints, values: _Ints, new_keys: _Ints, new_values: _Ints) -> tuple[_Ints, _Ints]:
    at = np.searchsorted(keys, new_keys)
    return np.insert(keys, at, new_keys), np.insert(values, at, new_values)
