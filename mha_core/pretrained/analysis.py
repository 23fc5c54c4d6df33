"""Questions asked of a real model's heads (notebooks 07 and 08), answered by search, not by eye.

Pure NumPy on what ``MiniLM.encode`` returns: no figures, no widgets. Layers and heads
are counted from 0 here; ``encoder.head_name`` gives the names people read (``"L3 H7"``).

- ``top_heads_for``: which heads put their largest weight from one token on another.
- ``marker_share``: how much weight each head puts on [CLS], [SEP] and punctuation.
- ``key_neighbours``: one token as each head's key projection sees it, and its nearest tokens.
- ``head_similarity`` and ``cluster_order``: how alike the heads' patterns are (Clark et al. 2019, section 6).
- ``greedy_prune`` and ``prune_minilm``: switch heads off one by one while the embedding stays close.
- ``single_head_removal`` and ``attention_on_words``: what switching one head off does to the
  embedding, beside where that head looks (attention is not importance).
- ``pair_cosines`` and ``cosine_calibration``: what a cosine between two embeddings means, from
  paraphrases and unrelated sentences.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Hashable, Iterable

import numpy as np

from .. import _validate

#: Tokens that mark the sentence rather than carry a word.
SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]"})


def is_marker(token: str) -> bool:
    """[CLS], [SEP], or a word piece made only of punctuation (``.``, ``,``, ``?``, ``'``, ...)."""
    if token in SPECIAL_TOKENS:
        return True
    text = token[2:] if token.startswith("##") else token
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


# --------------------------------------------------------------------------- where heads look


@dataclass(frozen=True)
class HeadHit:
    """One head, the token its largest weight lands on, and that weight."""

    layer: int
    head: int
    token: str
    index: int
    weight: float


def top_keys(attentions: np.ndarray, query: int) -> tuple[np.ndarray, np.ndarray]:
    """For every head, the key its largest weight from token ``query`` lands on, and that weight.

    Shapes:
        attentions: (L, H, T, T)
        returns: index (L, H), weight (L, H)
    """
    attentions = np.asarray(attentions)
    if attentions.ndim != 4 or attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(f"attentions must have shape (L, H, T, T); got {attentions.shape}")
    T = attentions.shape[-1]
    if not (isinstance(query, (int, np.integer)) and 0 <= query < T):
        raise ValueError(f"query={query!r} is not a token position; valid positions are 0 to {T - 1}")
    rows = attentions[:, :, query, :]  # (L, H, T)
    index = rows.argmax(axis=-1)  # (L, H)
    return index, np.take_along_axis(rows, index[..., None], axis=-1)[..., 0]  # (L, H), (L, H)


def top_heads_for(attentions: np.ndarray, tokens, query: str, targets: Iterable[str]) -> dict[str, list[HeadHit]]:
    """Which heads put their largest weight from ``query`` on each of ``targets``, strongest first.

    ``query`` and each target are tokens of the sentence (their first occurrence).

    Shapes:
        attentions: (L, H, T, T)
    """
    tokens = list(tokens)
    for word in (query, *targets):
        if word not in tokens:
            raise ValueError(f"{word!r} is not a token of this sentence; its tokens are {tokens}")
    index, weight = top_keys(attentions, tokens.index(query))  # (L, H), (L, H)
    found: dict[str, list[HeadHit]] = {}
    for target in targets:
        t = tokens.index(target)
        hits = [HeadHit(int(l), int(h), target, t, float(weight[l, h])) for l, h in zip(*np.nonzero(index == t))]
        found[target] = sorted(hits, key=lambda hit: -hit.weight)
    return found


def marker_share(attentions: np.ndarray, tokens) -> np.ndarray:
    """Per head: the weight on [CLS], [SEP] and punctuation, averaged over the query tokens.

    Shapes:
        attentions: (L, H, T, T)
        returns: (L, H), each between 0 and 1
    """
    markers = np.array([is_marker(t) for t in tokens])  # (T,)
    return np.asarray(attentions)[..., markers].sum(axis=-1).mean(axis=-1)  # (L, H)


# --------------------------------------------------------------------------- one token through each head's key projection


@dataclass(frozen=True)
class Neighbours:
    """A token's key vector in every head, compared with the key vectors of other tokens.

    Shapes:
        similarity: (L, H, N)   cosine between the query token's key and each candidate's key
        labels: N strings, e.g. "revoked (3)": the token and its sentence, counted from 1
        words: N strings, the tokens alone
        query_key: (L, H, Dh)   the query token's key in every head (no bias)
        keys: (L, H, N, Dh)     each candidate's key in every head (no bias)

    The cosine compares directions only. A score is a dot product, q . k = |q| |k| cos,
    so two keys that point the same way but differ in length get different scores from
    every query (``length_ratio``).
    """

    query_label: str
    labels: tuple[str, ...]
    words: tuple[str, ...]
    similarity: np.ndarray
    query_key: np.ndarray
    keys: np.ndarray

    def length_ratio(self, layer: int, head: int, label: str) -> float:
        """|k| of candidate ``label`` divided by |k| of the query token, in one head."""
        if label not in self.labels:
            raise ValueError(f"label={label!r} is not a candidate; candidates look like {self.labels[:3]}")
        k = self.keys[layer, head, self.labels.index(label)]  # (Dh,)
        return float(np.linalg.norm(k) / np.linalg.norm(self.query_key[layer, head]))

    def nearest(self, layer: int, head: int, k: int = 3, *, exclude_words=()) -> list[tuple[str, float]]:
        """The ``k`` candidates closest to the query token in one head, closest first."""
        sims = self.similarity[layer, head]  # (N,)
        order = [i for i in np.argsort(-sims) if self.words[i] not in exclude_words]
        return [(self.labels[i], float(sims[i])) for i in order[:k]]

    def heads_where_nearest(self, words: Iterable[str], *, exclude_words=()) -> list[tuple[int, int, str, float]]:
        """Heads whose nearest candidate (ignoring ``exclude_words``) is one of ``words``: (layer, head, label, cosine)."""
        words = set(words)
        L, H, _ = self.similarity.shape
        hits = []
        for l in range(L):
            for h in range(H):
                label, cosine = self.nearest(l, h, 1, exclude_words=exclude_words)[0]
                if self.words[self.labels.index(label)] in words:
                    hits.append((l, h, label, cosine))
        return sorted(hits, key=lambda hit: -hit[3])

    def nearest_in_every_head(self, *, exclude_words=()) -> tuple[np.ndarray, np.ndarray]:
        """Each head's nearest candidate (ignoring ``exclude_words``): its label and its cosine.

        Shapes:
            returns: labels (L, H) of str (object array), cosines (L, H)
        """
        L, H, _ = self.similarity.shape
        labels = np.empty((L, H), dtype=object)
        cosines = np.zeros((L, H))
        for l in range(L):
            for h in range(H):
                labels[l, h], cosines[l, h] = self.nearest(l, h, 1, exclude_words=exclude_words)[0]
        return labels, cosines

    def nearest_counts(self, *, by: str = "word", exclude_words=()) -> Counter:
        """In how many heads each candidate is the nearest: counted by ``word`` ("key") or by ``label`` ("key (4)")."""
        _validate.choice(by, "by", ("word", "label"))
        labels, _ = self.nearest_in_every_head(exclude_words=exclude_words)  # (L, H)
        if by == "label":
            return Counter(labels.ravel().tolist())
        return Counter(self.words[self.labels.index(label)] for label in labels.ravel())

    def nearest_length_ratios(self) -> np.ndarray:
        """Per head: ``length_ratio`` of its nearest candidate, |k| of that candidate over |k| of the query token.

        Shapes:
            returns: (L, H)
        """
        labels, _ = self.nearest_in_every_head()  # (L, H)
        L, H = labels.shape
        return np.array([[self.length_ratio(l, h, labels[l, h]) for h in range(H)] for l in range(L)])  # (L, H)


def key_neighbours(model, encodings, *, sentence: int = 0, word: str = "key") -> Neighbours:
    """``word`` in sentence ``sentence`` through every head's key projection, against every other word.

    Each token's vector entering layer l is projected by that layer's ``w_k`` (no bias:
    it adds the same vector to every key) and cut into heads; the cosine between the
    query token's key and each candidate's key is taken per head. Candidates are the
    tokens of all ``encodings`` except markers ([CLS], [SEP], punctuation), word pieces
    that continue a word (``##...``) and the query token itself.

    Shapes:
        returns: Neighbours with similarity (L, H, N)
    """
    encodings = list(encodings)
    tokens = list(encodings[sentence].tokens)
    if word not in tokens:
        raise ValueError(f"{word!r} is not a token of sentence {sentence}: {tokens}")
    position = tokens.index(word)
    L = model.n_layers
    keys = [np.stack([model.head_keys(enc, layer) for layer in range(L)]) for enc in encodings]  # each (L, H, T, Dh)
    labels, words, vectors = [], [], []
    for s, (enc, k) in enumerate(zip(encodings, keys)):
        for t, token in enumerate(enc.tokens):
            if is_marker(token) or token.startswith("##") or (s == sentence and t == position):
                continue
            labels.append(f"{token} ({s + 1})")
            words.append(token)
            vectors.append(k[:, :, t])  # (L, H, Dh)
    raw_candidates = np.stack(vectors, axis=2)  # (L, H, N, Dh)
    raw_query = keys[sentence][:, :, position]  # (L, H, Dh)
    candidates = raw_candidates / np.linalg.norm(raw_candidates, axis=-1, keepdims=True)
    query = raw_query / np.linalg.norm(raw_query, axis=-1, keepdims=True)
    similarity = np.einsum("lhnd,lhd->lhn", candidates, query)  # (L, H, N)
    return Neighbours(f"{word} ({sentence + 1})", tuple(labels), tuple(words), similarity, raw_query, raw_candidates)


def scores_from(model, encoding, layer: int, head: int, query: str, keys) -> np.ndarray:
    """The scaled scores q . k / sqrt(d_head) of token ``query`` of ``encoding`` against given key vectors.

    The query is the token's own query in that head (bias included); the keys are
    bias-free, as ``key_neighbours`` keeps them (the key bias would add the same number,
    q . b_k / sqrt(d_head), to every score).

    Shapes:
        keys: (N, Dh)
        returns: (N,)
    """
    tokens = list(encoding.tokens)
    if query not in tokens:
        raise ValueError(f"query={query!r} is not a token of this sentence; its tokens are {tokens}")
    q = encoding.layers[layer].q[head, tokens.index(query)]  # (Dh,)
    return np.asarray(keys) @ q / np.sqrt(model.d_head)  # (N,)


# --------------------------------------------------------------------------- how alike the heads are


def head_similarity(attention_sets) -> np.ndarray:
    """How alike every pair of heads attends, averaged over sentences: 1 - Jensen-Shannon divergence.

    For one sentence and two heads, the divergence (base 2, between 0 and 1) of their
    attention rows is averaged over the query tokens, as Clark et al. (2019, section 6)
    compare BERT's heads. 1 means the same pattern; 0 means patterns with no overlap.

    Shapes:
        attention_sets: a list of (L, H, T, T), one per sentence (T may differ)
        returns: (L*H, L*H), symmetric, 1 on the diagonal
    """
    total = None
    for attentions in attention_sets:
        attentions = np.asarray(attentions, dtype=np.float64)
        L, H, T, _ = attentions.shape
        p = attentions.reshape(L * H, T, T)  # (N, T, T) with N = L*H heads
        m = (p[:, None] + p[None, :]) / 2  # (N, N, T, T)

        def kl(a, b):
            # a * log2(a / b), 0 where a is 0
            return np.where(a > 0, a * np.log2(np.where(a > 0, a, 1) / np.where(b > 0, b, 1)), 0.0).sum(axis=-1)

        js = 0.5 * kl(p[:, None], m) + 0.5 * kl(p[None, :], m)  # (N, N, T)
        sim = 1.0 - js.mean(axis=-1)  # (N, N)
        total = sim if total is None else total + sim
    if total is None:
        raise ValueError("attention_sets is empty; give at least one sentence's attentions")
    return total / len(attention_sets)


def cluster_order(similarity: np.ndarray) -> list[int]:
    """An order of the items that puts similar ones side by side: average-linkage clustering.

    Repeatedly merges the two clusters with the highest mean similarity between their
    members; the order is the leaves of the merge tree, left to right.

    Shapes:
        similarity: (N, N), symmetric
        returns: a permutation of 0..N-1
    """
    similarity = np.asarray(similarity, dtype=np.float64)
    if similarity.ndim != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"similarity must be square (N, N); got {similarity.shape}")
    N = len(similarity)
    between = similarity.copy()  # (N, N): mean similarity between clusters, updated as they merge
    np.fill_diagonal(between, -np.inf)
    members: dict[int, list[int]] = {i: [i] for i in range(N)}
    alive = np.ones(N, dtype=bool)
    for _ in range(N - 1):
        masked = np.where(alive[:, None] & alive[None, :], between, -np.inf)  # (N, N)
        a, b = divmod(int(np.argmax(masked)), N)
        a, b = min(a, b), max(a, b)
        n_a, n_b = len(members[a]), len(members[b])
        # The mean over all pairs of the merged cluster is the size-weighted mean of the two parts' means.
        between[a] = (n_a * between[a] + n_b * between[b]) / (n_a + n_b)
        between[:, a] = between[a]
        between[a, a] = -np.inf
        members[a] = members[a] + members.pop(b)
        alive[b] = False
    return members[int(np.flatnonzero(alive)[0])] if N else []


# --------------------------------------------------------------------------- pruning


@dataclass(frozen=True)
class PruneResult:
    """Heads removed in order, and the score after each removal (``scores[i]`` with ``order[:i+1]`` removed)."""

    order: tuple
    scores: tuple[float, ...]
    threshold: float

    @property
    def removed(self) -> frozenset:
        return frozenset(self.order)


def greedy_prune(
    candidates: Iterable[Hashable],
    score: Callable[[frozenset], float],
    *,
    threshold: float,
    prepare: Callable[[frozenset], None] | None = None,
    max_removed: int | None = None,
    rescore_every: int = 1,
    on_step: Callable[[Hashable, float], None] | None = None,
) -> PruneResult:
    """Remove candidates one at a time, each time the one whose removal keeps ``score`` highest.

    Stops before the best remaining removal would bring the score below ``threshold``
    (or after ``max_removed``). ``score(removed)`` rates a set of removed candidates
    (higher is better); ``prepare(removed)``, if given, is called before candidates are
    scored against ``removed``, so a scorer can cache what they share; ``on_step(removed_one,
    score)`` after each removal (for progress reports).

    ``rescore_every=1`` is the plain greedy search: every remaining candidate is scored at
    every step. ``rescore_every=k`` scores them all only every k steps; in between, the
    next candidate in that ranking is tried alone and kept if the score stays at or above
    the threshold (a failure forces a full rescoring). It needs about k times fewer calls
    of ``score`` and gives the same order when removals do not interact.
    """
    remaining = list(candidates)
    removed: list = []
    scores: list[float] = []
    limit = len(remaining) if max_removed is None else int(max_removed)
    ranking: list = []  # candidates by their last full score, best first
    since_rescore = 0
    while remaining and len(removed) < limit:
        current = frozenset(removed)
        if prepare is not None:
            prepare(current)
        chosen = None
        if ranking and since_rescore < rescore_every:
            candidate = ranking[0]
            value = score(current | {candidate})
            if value >= threshold:
                chosen, best_score = candidate, value
        if chosen is None:
            rated = [(score(current | {c}), i) for i, c in enumerate(remaining)]
            rated.sort(key=lambda r: (-r[0], r[1]))
            best_score, best_i = rated[0]
            if best_score < threshold:
                break
            chosen = remaining[best_i]
            ranking = [remaining[i] for _, i in rated]
            since_rescore = 0
        ranking.remove(chosen)
        remaining.remove(chosen)
        removed.append(chosen)
        scores.append(float(best_score))
        since_rescore += 1
        if on_step is not None:
            on_step(chosen, float(best_score))
    return PruneResult(tuple(removed), tuple(scores), float(threshold))


class EmbeddingKeeper:
    """Scores a set of switched-off heads by how close the embeddings stay: the mean cosine
    between each text's embedding with those heads off and with every head on.

    ``prepare(removed)`` keeps every layer's input for the current set, so scoring one more
    head in layer l reruns only layers l to L-1.
    """

    def __init__(self, model, texts):
        self.model = model
        self.x, self.padding = model.layer_inputs(list(texts))  # (N, T, D), (N, T)
        self.reference = model.pool(model.run_from(self.x, self.padding, 0)[-1], self.padding)  # (N, D)
        self._inputs: list[np.ndarray] | None = None
        self._removed: frozenset = frozenset()

    def cosines(self, removed) -> np.ndarray:
        """Per text, the cosine between the embedding with ``removed`` heads off and the full one.

        Shapes:
            returns: (N,)
        """
        pruned = self.model.pool(self.model.run_from(self.x, self.padding, 0, removed)[-1], self.padding)  # (N, D)
        return (pruned * self.reference).sum(axis=-1)

    def prepare(self, removed: frozenset) -> None:
        self._inputs = [self.x] + self.model.run_from(self.x, self.padding, 0, removed)[:-1]  # input of each layer
        self._removed = frozenset(removed)

    def __call__(self, removed: frozenset) -> float:
        new = removed - self._removed
        if self._inputs is None or not self._removed <= removed or not new:
            return float(self.cosines(removed).mean())
        start = min(layer for layer, _ in new)
        last = self.model.run_from(self._inputs[start], self.padding, start, removed)[-1]  # (N, T, D)
        return float((self.model.pool(last, self.padding) * self.reference).sum(axis=-1).mean())


def prune_minilm(model, texts, *, threshold: float = 0.95, max_removed: int | None = None, rescore_every: int = 1,
                 on_step=None) -> PruneResult:
    """Greedy head removal on ``texts``: keep the mean embedding cosine to the full model >= ``threshold``.

    See ``greedy_prune`` for ``rescore_every``.
    """
    keeper = EmbeddingKeeper(model, texts)
    heads = [(layer, head) for layer in range(model.n_layers) for head in range(model.n_heads)]
    return greedy_prune(heads, keeper, threshold=threshold, prepare=keeper.prepare, max_removed=max_removed,
                        rescore_every=rescore_every, on_step=on_step)


# --------------------------------------------------------------------------- one head off: attention against importance


def single_head_removal(model, texts, heads=None) -> np.ndarray:
    """Per head and text: the cosine between the embedding with that one head off and with every head on.

    ``heads`` (pairs counted from 0) limits the heads switched off; the others get NaN.
    Layers below a head are run once and reused (``EmbeddingKeeper``).

    Shapes:
        returns: (L, H, N)
    """
    keeper = EmbeddingKeeper(model, texts)
    keeper.prepare(frozenset())
    L, H = model.n_layers, model.n_heads
    heads = [(l, h) for l in range(L) for h in range(H)] if heads is None else [tuple(p) for p in heads]
    _validate.heads_off(heads, H, L)  # the one check of every pair, before any work
    cosines = np.full((L, H, len(keeper.reference)), np.nan)
    for layer, head in heads:
        start_input = keeper._inputs[layer]  # (N, T, D): the input of this layer, every head on below
        last = model.run_from(start_input, keeper.padding, layer, [(layer, head)])[-1]  # (N, T, D)
        cosines[layer, head] = (model.pool(last, keeper.padding) * keeper.reference).sum(axis=-1)  # (N,)
    return cosines


def attention_on_words(model, texts) -> np.ndarray:
    """Per head: the share of its weight on words (not [CLS], [SEP] or punctuation), averaged over texts.

    ``1 - marker_share``, sentence by sentence, then the mean.

    Shapes:
        returns: (L, H), each between 0 and 1
    """
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty; give at least one text")
    shares = [1.0 - marker_share(enc.attentions, enc.tokens) for enc in map(model.encode, texts)]  # each (L, H)
    return np.mean(shares, axis=0)


# --------------------------------------------------------------------------- what a cosine means


def pair_cosines(model, pairs, heads_off=None) -> np.ndarray:
    """The cosine between the embeddings of the two texts of each pair.

    Shapes:
        returns: (N,)
    """
    pairs = [tuple(p) for p in pairs]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ValueError("pairs must be a non-empty list of (text, text)")
    emb = model.embed([t for p in pairs for t in p], heads_off=heads_off).reshape(len(pairs), 2, -1)  # (N, 2, D)
    return (emb[:, 0] * emb[:, 1]).sum(axis=-1)  # (N,)


@dataclass(frozen=True)
class CosineCalibration:
    """What cosines between embeddings look like: paraphrase pairs and unrelated pairs.

    Shapes:
        paraphrase, unrelated: (N,), one cosine per pair
    """

    paraphrase: np.ndarray
    unrelated: np.ndarray

    def band(self, kind: str) -> tuple[float, float, float]:
        """(lowest, mean, highest) cosine of ``kind``: ``"paraphrase"`` or ``"unrelated"``."""
        if kind not in ("paraphrase", "unrelated"):
            raise ValueError(f"kind={kind!r}; valid kinds are 'paraphrase' and 'unrelated'")
        values = getattr(self, kind)
        return float(values.min()), float(values.mean()), float(values.max())

    def as_dict(self) -> dict:
        """The bands as plain numbers, what the figure builders take."""
        return {kind: self.band(kind) for kind in ("paraphrase", "unrelated")}


def cosine_calibration(model, calibration: dict) -> CosineCalibration:
    """Cosines of the pairs in ``calibration`` (``data/sentences/calibration.json``: paraphrases, unrelated)."""
    for kind in ("paraphrases", "unrelated"):
        if kind not in calibration:
            raise ValueError(f"calibration has no {kind!r} list; it needs 'paraphrases' and 'unrelated' pairs")
    return CosineCalibration(pair_cosines(model, calibration["paraphrases"]), pair_cosines(model, calibration["unrelated"]))


def embedding_cosines(model, texts, heads_off) -> np.ndarray:
    """Per text: cosine between its embedding with ``heads_off`` switched off and with every head on.

    Shapes:
        returns: (N,)
    """
    full = model.embed(texts)  # (N, D)
    pruned = model.embed(texts, heads_off=heads_off)  # (N, D)
    return (full * pruned).sum(axis=-1)


def paraphrase_ranking(model, triples, heads_off=None) -> np.ndarray:
    """Per (anchor, paraphrase, distractor): whether the paraphrase is closer to the anchor.

    Shapes:
        returns: (N,) bool
    """
    triples = [tuple(t) for t in triples]
    if not triples or any(len(t) != 3 for t in triples):
        raise ValueError("triples must be a non-empty list of (anchor, paraphrase, distractor)")
    flat = [s for t in triples for s in t]
    emb = model.embed(flat, heads_off=heads_off).reshape(len(triples), 3, -1)  # (N, 3, D)
    to_paraphrase = (emb[:, 0] * emb[:, 1]).sum(axis=-1)  # (N,)
    to_distractor = (emb[:, 0] * emb[:, 2]).sum(axis=-1)  # (N,)
    return to_paraphrase > to_distractor
