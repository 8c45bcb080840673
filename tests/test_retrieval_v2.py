"""Retrieval v2 (issue 24): floors on the FROZEN test split of the held-out query sets, a little under what
the learned fusion reaches (bench/results/retrieval-after.txt), so a regression fails; and the pieces
behind them: respelling, unexplained characters, the shipped ranker file, the index upgrade."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from db.records import demo_catalog
from retrieval.documents import PREVIOUS_RECIPE, doc_from_product
from retrieval.evaluation import SHIPPED, by_split, evaluate, load_queries
from retrieval.index import VectorIndex, build_index
from retrieval.lexical import LexicalIndex
from retrieval.ranker import FEATURES, GATE_FEATURES, MODES, load_rankers
from retrieval.search import ProductSearch
from retrieval.synonyms import HYPERNYM_HEADS, HeadFamilies, PinyinNames, head_noun, unknown_words
from retrieval.training import examples
from tests.fakes.demo import DEMO_DAY


def _test_split(name: str):
    return by_split(load_queries(SHIPPED[name][1]), "test")["test"]


async def _report(search: ProductSearch, queries) -> dict:
    await search.prime([q.query for q in queries])

    async def retrieve(query: str) -> list[str]:
        return [c.product_id for c in await search.search(query, top_k=10)]

    return await evaluate(retrieve, queries)


async def test_demo_frozen_test_split_meets_its_floor(search):
    """Measured 0.869 / 0.907 Recall@1/@3, 83% of absent queries answered with nothing; English 1.0, synonyms
    0.579 and typos 0.842 Recall@1 (typos 0.789 before the pinyin respelling); paraphrase Recall@3 0.842."""
    report = await _report(search, _test_split("demo"))
    assert report["overall"]["recall@1"] >= 0.86 and report["overall"]["recall@3"] >= 0.88
    assert 1 - report["empty"]["returned_candidates"] >= 0.75
    kinds = report["by_kind"]
    assert kinds["name"]["recall@1"] >= 0.95 and kinds["english"]["recall@1"] >= 0.95
    assert kinds["paraphrase"]["recall@3"] >= 0.8 and kinds["need"]["recall@3"] >= 0.85
    assert kinds["synonym"]["recall@1"] >= 0.6 and kinds["typo"]["recall@1"] >= 0.75


async def test_outdoor_frozen_test_split_lexical_floor():
    """The second shop's 2,014 products, ranked by the lexical model alone (no embedding: a test may not
    spend ten minutes on the index; the hybrid figures are in bench/results/retrieval-after.txt).
    Measured 0.728 / 0.788, 93% of absent queries answered with nothing; English 0.400 Recall@1 through the
    English names the catalog's generator writes into `aliases`."""
    docs = [doc_from_product(p) for p in json.loads(SHIPPED["outdoor"][0].read_text(encoding="utf-8"))]
    report = await _report(ProductSearch(docs), _test_split("outdoor"))
    assert report["overall"]["recall@1"] >= 0.70 and report["overall"]["recall@3"] >= 0.75
    assert 1 - report["empty"]["returned_candidates"] >= 0.85
    assert report["by_kind"]["name"]["recall@1"] >= 0.95 and report["by_kind"]["traditional"]["recall@1"] >= 0.9
    assert report["by_kind"]["english"]["recall@1"] >= 0.35 and report["by_kind"]["typo"]["recall@1"] >= 0.85


def test_query_sets_are_split_and_the_test_split_is_not_trained_on():
    for name in SHIPPED:
        splits = by_split(load_queries(SHIPPED[name][1]), "each")
        assert list(splits) == ["train", "test"] and len(splits["test"]) > 200


async def test_training_refuses_the_test_split(search):
    with pytest.raises(ValueError, match="train split only"):
        await examples(search, _test_split("demo")[:3])


def test_the_shipped_ranker_loads_for_both_modes():
    rankers = load_rankers()
    assert set(rankers) == set(MODES)
    for ranker in rankers.values():
        assert ranker.weights.shape == (len(FEATURES),) and ranker.gate_weights.shape == (len(GATE_FEATURES),)
        assert 0 < ranker.gate_threshold < 1 and "train split" in ranker.trained_on


def _demo_docs():
    return [doc_from_product(p.__dict__) for p in demo_catalog(DEMO_DAY).products]


@pytest.fixture(scope="module")
def lexical_index():
    return LexicalIndex(_demo_docs())


@pytest.mark.parametrize(("typed", "spelled"), [("哑玲", "哑铃"), ("兰球", "篮球"), ("瑜珈垫", "瑜伽垫"),
                                                ("跑步机", "跑步机"), ("yoga mat", "yogamat")])
def test_homophones_of_catalog_names_are_respelled(lexical_index, typed, spelled):
    assert lexical_index.analyze(typed).folded == spelled


@pytest.mark.parametrize(("query", "words"), [("GPS表有吗", ["gps", "表"]), ("导汗带有没有", ["导汗", "带"]),
                                              ("护膝有卖吗", ["护膝"]), ("护膝还有货冇", ["护膝"])])
def test_a_having_question_is_cut_off_the_goods_before_it(lexical_index, query, words):
    """jieba glues 有 to the word before it (表有, 带有: to carry); the asking words stand apart and say nothing,
    nor do the particles people type (冇, Cantonese for 没有)."""
    assert lexical_index.tokenizer.tokens(query) == words


@pytest.mark.parametrize(("typed", "spelled"), [
    ("水代", "水袋"), ("睡代", "睡袋"),   # both shui dai: the spelling that keeps the typed character
    ("水带", "水袋"), ("睡带", "睡袋"),
])
def test_a_sound_the_catalog_writes_two_ways_is_respelled_as_the_one_keeping_the_typed_characters(typed, spelled):
    """水袋 (a water bladder) and 睡袋 (a sleeping bag) are both shui dai: 水代 is a typo of the first, whichever
    the catalog lists first."""
    docs = _demo_docs()
    for order in ((0, 1), (1, 0)):
        names = ("3升水袋", "三季睡袋")
        extra = [replace(docs[0], product_id=f"X{k}", name=names[k]) for k in order]
        assert LexicalIndex([*docs, *extra]).analyze(typed).folded == spelled


@pytest.mark.parametrize(("typed", "spelled"), [
    ("运动头滞", "运动头带"),      # 带 is a part of 滞, and they sound different (dai / zhi)
    ("登山蛙多少钱", "登山鞋多少钱"),   # 蛙 and 鞋 share 圭
    ("爬山用的登山蛙还有吗", "爬山用的登山蛙还有吗"),   # three content words: a described need is left as written
    ("雪鞋", "雪鞋"),              # 雪 is a character of the catalog's names: not a typo
    ("网球", "网球"),
])
def test_shape_alike_typos_of_catalog_names_are_respelled(lexical_index, typed, spelled):
    """A character no name uses, inside what would otherwise spell a name piece, read as the name's character
    that looks like it (形近字: not a homophone, so `respell` leaves it)."""
    assert lexical_index.analyze(typed).folded == spelled


@pytest.mark.parametrize(("typed", "spelled"), [
    ("动力蝇", "动力绳"),   # 蝇 / 绳 share 黾; jieba cuts 动力绳 off the name 9.8毫米70米动力绳 as 动力 + 绳
    ("朔溪鞋", "溯溪鞋"),   # 朔 is a part of 溯; 溯溪鞋 is three single characters to jieba
    ("帐逢", "帐篷"),       # zhang feng is also the series 长风, which keeps none of the typed characters
    ("长风", "长风"),
])
def test_typos_of_names_jieba_cuts_into_characters_and_sound_alikes_of_other_words(typed, spelled):
    """A shape typo is read where the name runs along two characters at a time (its pairs), not only where the
    name is a word; a homophone respelling that keeps none of the typed characters is another word."""
    docs = _demo_docs()
    names = ("9.8毫米70米动力绳", "女款溯溪鞋", "长风 碳纤维登山杖", "4人四季帐篷")
    extra = [replace(docs[0], product_id=f"X{k}", name=name) for k, name in enumerate(names)]
    assert LexicalIndex([*docs, *extra]).analyze(typed).folded == spelled


@pytest.mark.parametrize(("typed", "spelled"), [
    ("taibei", "钛杯"),        # 300毫升单层钛杯: jieba cuts 钛 and 杯 apart
    ("suxixie", "溯溪鞋"),     # 女款溯溪鞋: three single characters
    ("diaoxiang", "钓箱"),     # 25升钓箱: one unknown word 升钓箱, whose ending names the thing
    ("shuangren zhangpeng", "双人 帐篷"),
])
def test_pinyin_spells_names_jieba_cuts_apart(typed, spelled):
    """A query typed in pinyin is read with the characters it spells among a name's pieces, and among the runs of
    a name's characters that no word of it is."""
    docs = _demo_docs()
    names = ("山泉 苍穹 300毫升单层钛杯", "峰客 游隼 女款溯溪鞋", "江湖客 山脊 25升钓箱")
    lexical = LexicalIndex([*docs, *(replace(docs[0], product_id=f"X{k}", name=n) for k, n in enumerate(names))])
    assert PinyinNames(lexical.size, lexical.spelling, lexical.name_piece).spelled(typed) == spelled


@pytest.mark.parametrize(("typed", "other"), [
    ("单人帐", "1人"), ("四人帐篷", "4人"), ("2人的防潮垫", "双人"), ("1人", "单人"),
    ("3-4人锅", ""),     # a range is not a head count (nor is 1-2人 of a name 12人)
    ("成人轮滑鞋", ""), ("双人 帐篷", ""),   # no name here says 2人
])
def test_a_head_count_is_read_as_the_catalog_also_writes_it(typed, other):
    """单人 and 1人 are one number: the catalog's tents say 1人 and its mats 单人, so a query's head count is also
    read in the catalog's other writing of it (ProductSearch adds it to what the lexical signals read)."""
    docs = _demo_docs()
    names = ("1人四季双层帐篷", "4人三季帐篷", "单人铝膜防潮垫", "双人自动充气垫", "1-2人钛锅具套装")
    lexical = LexicalIndex([*docs, *(replace(docs[0], product_id=f"X{k}", name=n) for k, n in enumerate(names))])
    assert lexical.head_counts(typed) == other


@pytest.mark.parametrize(("typed", "read"), [
    ("阿迪跑鞋", "阿迪达斯跑鞋"),    # a long brand clipped to its first characters, as customers write it
    ("迪卡的帐篷", "迪卡侬的帐篷"),
    ("阿迪达斯跑鞋", "阿迪达斯跑鞋"),  # written out already
    ("尤尼克斯羽毛球拍", "尤尼克斯羽毛球拍"),
    ("保温水壶中号", "保温水壶中号"),  # no brand here
])
def test_a_clipped_brand_is_read_as_the_brand(lexical_index, typed, read):
    assert lexical_index.analyze(typed).folded == read
    assert lexical_index.unclip(typed) == read


def test_a_brand_prefix_other_products_words_hold_is_not_a_clipped_brand():
    """营地 begins the brand 营地家 and is a word of other products (营地灯): it stays a word; 壶中 of 壶中天 is
    read at the start of a word only (水壶中号 is 水壶 + 中号)."""
    docs = _demo_docs()
    base = docs[0]
    made = [replace(base, product_id="X1", name="折叠椅", brand="营地家"),
            replace(base, product_id="X2", name="营地灯", brand="光野"),
            replace(base, product_id="X3", name="茶具", brand="壶中天")]
    index = LexicalIndex([*docs, *made])
    assert index.unclip("营地家的折叠椅") == "营地家的折叠椅"
    assert index.unclip("营地灯") == "营地灯"
    assert index.unclip("壶中茶具") == "壶中天茶具"
    assert index.unclip("保温水壶中号") == "保温水壶中号"
    scores = index.brand_match(index.analyze("阿迪跑鞋"))
    assert {docs[i].brand for i in np.flatnonzero(scores)} == {"阿迪达斯"}


def test_shape_neighbours_share_a_part_of_more_than_one_stroke():
    from retrieval.shapes import ShapeNeighbours, components

    assert "果" in components("踝") and "一" not in components("千")
    neighbours = ShapeNeighbours("踝铃行篷干")
    assert neighbours.of("锞") == {"踝"} and "铃" not in neighbours.of("钤")   # 果; only the radical 钅
    assert neighbours.of("衍") == {"行"} and neighbours.of("逢") == {"篷"}   # one is a part of the other
    assert not neighbours.of("话") and not neighbours.of("一")


def test_thesaurus_kinship_and_the_gate_reading_of_it(lexical_index):
    from retrieval.thesaurus import GROUP, MINOR, SYNONYMS, kinship

    assert kinship("棍", "杖") == SYNONYMS and kinship("安全帽", "头盔") == GROUP and kinship("靴", "鞋") == MINOR
    assert kinship("线", "拍") == 0 and kinship("不是一个词呀", "鞋") == 0
    docs = {d.base_name: i for i, d in enumerate(_demo_docs())}
    assert lexical_index.kin(lexical_index.analyze("爬坡用的棍"), docs["碳纤维登山杖"]) == SYNONYMS
    assert lexical_index.kin(lexical_index.analyze("羽毛球拍线"), docs["羽毛球拍"]) == 0
    assert lexical_index.kin(lexical_index.analyze("篮球"), docs["篮球"]) == 0   # nothing unexplained


def test_unexplained_characters_ignore_counting_words(lexical_index):
    docs = {d.base_name: i for i, d in enumerate(_demo_docs())}
    assert lexical_index.unexplained(lexical_index.analyze("篮球架"), docs["篮球"]) == (pytest.approx(1 / 3), 1.0)
    assert lexical_index.unexplained(lexical_index.analyze("羽毛球拍买两支"), docs["羽毛球拍"])[1] == 0.0
    # a noun suffix names nothing a product could lack: 袜子 is 袜
    assert lexical_index.unexplained(lexical_index.analyze("运动袜子"), docs["运动袜"]) == (0.0, 0.0)


@pytest.mark.parametrize(("asked", "found", "other"), [
    ("羽毛球拍的收纳包", "羽毛球拍", (0.0, 1.0)),   # 包 ends 双肩运动背包, 跑步腰包: a bag is another thing sold
    ("网球款的鞋", "足球鞋", (1.0, 0.0)),          # 网球 is another product the catalog sells
    ("踢球穿的靴", "足球鞋", (0.0, 0.0)),          # 靴 heads nothing in the catalog: maybe the same thing
    ("篮球鞋", "篮球鞋", (0.0, 0.0)),
])
def test_other_kind_names_another_thing_the_catalog_sells(lexical_index, asked, found, other):
    """The gate's reading of a near miss: the query names a kind of thing the shop sells, and the product found
    is not that kind; a word the catalog never uses as a head noun may be another name of the same thing."""
    docs = {d.base_name: i for i, d in enumerate(_demo_docs())}
    assert lexical_index.other_kind(lexical_index.analyze(asked), docs[found]) == other


class _Embedder:
    name, dimensions = "test:names", 4

    def __init__(self):
        self.queries: list[str] = []

    async def embed_passages(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    async def embed_queries(self, texts):
        self.queries += texts
        return np.tile(np.array([1, 0, 0, 0], dtype=np.float32), (len(texts), 1))


async def test_an_index_of_the_previous_recipe_gains_its_name_vectors_only(tmp_path, monkeypatch):
    docs = _demo_docs()[:5]
    path = tmp_path / "old.index"
    embedder = _Embedder()
    await build_index(path, docs, embedder, progress=False)
    old = VectorIndex.load(path, embedder.name)
    old.names[:] = 0   # as written by the previous recipe
    monkeypatch.setattr("retrieval.index.RECIPE", PREVIOUS_RECIPE)
    old.save(path)
    monkeypatch.undo()
    embedder.queries.clear()
    report = await build_index(path, docs, embedder, progress=False)
    assert (report.embedded, report.kept) == (0, 5) and embedder.queries == [d.base_name for d in docs]
    assert VectorIndex.load(path, embedder.name).named.all()


def test_unknown_words_are_the_query_words_the_catalog_never_uses(lexical_index):
    q = lexical_index.analyze("有运动鞋吗")
    assert unknown_words(lexical_index.content_words(q), lexical_index.vocabulary) == ["运动鞋"]
    latin = unknown_words([], lexical_index.vocabulary, "solo kayak 3x3 230g")
    assert latin == ["solo", "kayak"]


def test_a_hypernym_names_a_family_of_head_nouns_and_a_near_miss_does_not(lexical_index):
    docs = _demo_docs()
    families = HeadFamilies(docs, [head_noun(d, lexical_index.tokenizer) for d in docs])
    shoes = families.family(["运动鞋"], lexical_index.vocabulary)
    assert shoes.sum() >= HYPERNYM_HEADS and all(docs[i].base_name.endswith("鞋") for i in np.flatnonzero(shoes))
    for near_miss in ("杠铃", "篮球架", "跑步机"):   # 壶铃, 羽毛球网架: one head noun each; 机: none
        assert not families.family([near_miss], lexical_index.vocabulary).any(), near_miss


@pytest.mark.parametrize(("typed", "spelled", "first"), [
    ("yumaoqiupai", "羽毛球拍", "羽毛球拍"),       # a whole name
    ("yaling taozhuang", "哑铃 套装", "可调节哑铃套装"),   # another name (an alias) and a word of the name
    ("jishu tiaosheng", "计数 跳绳", "计数跳绳"),   # two words of one name
    ("xian", "", None),                         # too short to be a name
])
def test_a_query_typed_in_pinyin_spells_the_catalogs_names(lexical_index, typed, spelled, first):
    """Letters cut into syllables every way they can be, looked up among every name piece by sound."""
    docs = _demo_docs()
    pinyin = PinyinNames(len(docs), lexical_index.spelling, lexical_index.name_piece)
    scores = pinyin.match(typed)
    assert pinyin.spelled(typed) == spelled
    assert (docs[int(np.argmax(scores))].base_name if scores.any() else None) == first


async def test_a_synonym_of_a_sold_product_is_listed_to_the_customer_and_a_near_miss_is_not_sold(conn, search):
    """Through the customer's path (the reader, the offline model, the validator): a word for a kind of thing
    the shop sells under other names lists those products; a thing it lacks is still "not sold"."""
    from agent.memory import InProcessMemory
    from agent.turn import Agent

    agent = Agent(conn, search)

    async def reply(text):
        return (await agent.answer(text, user_id="u", memory=await InProcessMemory(warn=False).load("c"))).answer

    shoes = await reply("有运动鞋吗")
    assert "没有销售" not in shoes and "跑步鞋" in shoes and "元" in shoes, shoes
    for lacking in ("有杠铃吗", "有篮球架吗"):
        assert "没有销售" in await reply(lacking), lacking


def test_the_head_nouns_a_query_names_are_found_by_lookup_as_by_a_pass_over_every_head(lexical_index):
    """kind_match looks the query's substrings and syllable runs up among the head nouns; the definition it
    replaces passed over every head noun (literally in the query, or its pinyin a run of the query's)."""
    from retrieval.text import pinyin_of

    def every_head(folded: str) -> set[str]:
        sound = f" {pinyin_of(folded)} "
        return {word for word in lexical_index._heads
                if word in folded or ((word_sound := pinyin_of(word)) and f" {word_sound} " in sound)}

    queries = [q.query for q in load_queries(SHIPPED["demo"][1])][:300] + ["lanqiu 篮球鞋", "登山仗", "", "跑步"]
    for query in queries:
        folded = lexical_index.analyze(query).folded
        assert lexical_index._heads_named(folded) == every_head(folded), query
