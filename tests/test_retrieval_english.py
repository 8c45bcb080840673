"""The English evidence of product search (issue 24; retrieval/glosses.py): a query's English words read
through a dictionary and the product's own Latin words and quantities, weighed by weights fitted after the
rest of the ranker (training.fit_english). A query without Latin letters must score exactly as before."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from retrieval.documents import RetrievalDoc
from retrieval.glosses import ENGLISH_FEATURES, EnglishEvidence, gloss, latin_unknown
from retrieval.ranker import load_rankers
from retrieval.search import ProductSearch, Signals
from retrieval.training import Example, fit_english, served

pytest.importorskip("cedict")


def _doc(pid: str, name: str, aliases: tuple[str, ...] = ()) -> RetrievalDoc:
    return RetrievalDoc(pid, name, "", name, aliases=aliases)


JACKETS = [_doc("m", "北境 远峰 男款三合一冲锋衣", ("hardshell jacket",)),
           _doc("w", "北境 远峰 女款三合一冲锋衣", ("hardshell jacket",)),
           _doc("g", "北境 远峰 高筒雪套", ("gaiters",)),
           _doc("t1", "山野客 磐石 1人四季双层帐篷", ("tent",)),
           _doc("t4", "山野客 苍穹 4人三季自动速开帐篷", ("tent",))]


def test_the_dictionary_reads_english_words_and_their_inflections_offline():
    assert "钛" in gloss("titanium")
    assert any("女" in s for s in gloss("women"))
    assert any("锁" in s for s in gloss("locking"))          # lock + ing
    assert any("男" in s for s in gloss("men"))               # "man 的复数" → man
    assert gloss("qwzxv") == ()
    # only the Latin words the catalog does not know are read through it
    assert latin_unknown("Women hardshell jacket 3L", {"hardshell", "jacket"}) == ["women"]


def test_english_evidence_prefers_the_product_whose_name_says_what_the_english_words_say():
    evidence = EnglishEvidence(JACKETS)
    vocabulary = {"hardshell", "jacket", "gaiters", "tent"}
    e = evidence.match("women hardshell jacket", vocabulary)
    gloss_col, cover_col, quantity_col = (ENGLISH_FEATURES.index(f) for f in ("gloss", "english_cover", "quantity"))
    assert e[1, gloss_col] > e[0, gloss_col] == 0.0                 # 女款, not 男款
    assert e[0, cover_col] == e[1, cover_col] == pytest.approx(2 / 3) and e[2, cover_col] == 0.0
    q = evidence.match("1 person tent 4 season", vocabulary)
    assert q[3, quantity_col] == 1.0 and q[4, quantity_col] == 0.0   # 1人四季, not 4人三季
    assert evidence.match("女款冲锋衣", vocabulary) is None


async def test_a_chinese_query_scores_exactly_as_without_the_evidence():
    search = ProductSearch(JACKETS)
    chinese = await search.signals("女款冲锋衣")
    english = await search.signals("women hardshell jacket")
    assert chinese.english is None and english.english is not None
    assert (await search.signals("北境 women hardshell jacket")).english is None   # a Chinese query naming Latin words
    ranker = replace(search.ranker(chinese), english_weights=np.zeros(len(ENGLISH_FEATURES), np.float32))
    weighted = replace(ranker, english_weights=np.full(len(ENGLISH_FEATURES), 5.0, np.float32))
    assert np.array_equal(weighted.score(chinese.features(), chinese.english), ranker.score(chinese.features()))
    assert not np.array_equal(weighted.score(english.features(), english.english), ranker.score(english.features()))


def _example(english_query: bool, rng: np.random.Generator) -> Example:
    """Four products; the fixed ranker's features cannot tell 0 from 1 (the same noise), the English evidence
    can (product 0 holds what the English words say) — only for an English query."""
    n = 4
    base = rng.uniform(0, 0.1, n).astype(np.float32)
    base[[0, 1]] = 1.0 + rng.uniform(0, 0.05)
    base[1] += 0.01   # the wrong one ahead by a hair
    s = Signals(name=base, brand=np.zeros(n, np.float32), bm25=base, bm25_max=5.0, coverage=1.0,
                latin=english_query, words=2, token_cover=base.copy(), head=np.zeros(n, np.float32),
                category=np.zeros(n, np.float32))
    if english_query:
        s.english = np.zeros((n, len(ENGLISH_FEATURES)), np.float32)
        s.english[0, 0] = 1.0
    relevant = np.zeros(n, dtype=bool)
    relevant[0] = True
    return Example(s, s.features(), relevant)


def test_fit_english_learns_a_weight_that_fixes_english_queries_and_leaves_chinese_ones_alone():
    rng = np.random.default_rng(3)
    rows = [_example(k % 2 == 0, rng) for k in range(20)]
    ranker = replace(load_rankers()["lexical"], english_weights=np.zeros(len(ENGLISH_FEATURES), np.float32))
    fitted = fit_english(ranker, rows)
    assert fitted.english_weights[0] > 0
    assert np.array_equal(fitted.weights, ranker.weights) and fitted.gate_bias == ranker.gate_bias
    for ex in rows:
        before, after = ranker.score(ex.features, ex.signals.english), fitted.score(ex.features, ex.signals.english)
        if ex.signals.english is None:
            assert np.array_equal(before, after) and served(fitted, ex) == served(ranker, ex)
        else:
            assert int(np.argmax(before)) == 1 and int(np.argmax(after)) == 0
