"""The catalog's words as the reader sees them: every product's names and unique short forms, brands,
categories, English names and sounds, built once per catalog (`Vocabulary.of`) and asked by every reading."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import jieba
import jieba.posseg

from retrieval.bridge import senses
from retrieval.glosses import gloss
from retrieval.text import fold, is_han, pinyin_of
from retrieval.thesaurus import codes as thesaurus_codes

# What a customer calls a category, beyond its own name.
CATEGORY_WORDS = {"户外": ("户外", "露营", "登山", "徒步"), "游泳": ("游泳",), "健身": ("健身", "撸铁", "力量训练"),
                  "服饰": ("服饰", "衣服", "服装", "运动服"), "护具": ("护具",), "轮滑": ("轮滑",),
                  "配件": ("配件",)}


# Words that qualify any goods and name none (运动服饰 is the category 服饰).
QUALITIES = ("运动", "专业", "新款", "正品", "好用", "高端", "入门", "便宜", "实惠")   # say nothing of whom or what for
MODIFIERS = (*QUALITIES, "男士", "女士", "儿童", "成人")


def _as_pattern(word: str) -> str:
    """A name as a regular expression; a Latin one only as whole words ('tent' is not in 'content')."""
    escaped = re.escape(word)
    return f"(?<![a-z]){escaped}(?:e?s)?(?![a-z])" if re.search("[a-z]", word) else escaped   # yoga blocks


_PACK_SIZE = re.compile(r"[（(][^）)]*[）)]")


def base_name(name: str) -> str:
    """A product name without its pack size: 乒乓球（10只装） → 乒乓球."""
    return _PACK_SIZE.sub("", name).strip()


def singular_words(phrase: str) -> list[str]:
    """An English phrase's words, each in the singular (balls → ball, boxes → box, shoes → shoe)."""
    def one(word: str) -> str:
        if len(word) > 3 and word.endswith(("xes", "ches", "shes", "sses")):
            return word[:-2]
        return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
    return [one(w) for w in re.findall(r"[a-z]+", phrase)]


@dataclass(frozen=True)
class Vocabulary:
    """The catalog's words: product names and their unique short forms, brands, categories."""

    names: dict[str, str]
    brands: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None            # every name, longest first: one pass finds them all
    category_pattern: re.Pattern[str] | None = None   # every category word, longest first
    category_of: dict[str, str] = field(default_factory=dict)
    # first syllable → [(length, {pinyin of a name: product id})]: names of 3+ Chinese characters by sound
    sounds: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    known_words: tuple[str, ...] = ()   # brands, category words and generic modifiers, longest first
    # characters that end the names of several products (鞋, 包, 球): a kind of goods written as one character
    kind_characters: frozenset[str] = frozenset()
    # a word English names end with → (product id, the words of all its English names): 'ping pong paddle' and
    # 'table tennis bat' let 'table tennis paddle' name the same product
    english: dict[str, tuple[tuple[str, frozenset[str]], ...]] = field(default_factory=dict)
    brand_of: dict[str, str] = field(default_factory=dict)   # product id → its brand
    category_by_product: dict[str, str] = field(default_factory=dict)   # product id → its category

    @cached_property
    def brand_short_forms(self) -> dict[str, str]:
        """A brand of four or more Chinese characters said by its first two (阿迪 for 阿迪达斯, 尤尼 for 尤尼克斯), when
        those are no word of the dictionary (露露, 麦克 are) and begin no other brand: short form → brand."""
        jieba.dt.check_initialized()
        starts: dict[str, list[str]] = {}
        for brand in self.brands:
            if len(brand) >= 2 and all(map(is_han, brand[:2])):
                starts.setdefault(brand[:2], []).append(brand)
        return {short: brands[0] for short, brands in starts.items()
                if len(brands) == 1 and len(brands[0]) >= 4 and all(map(is_han, brands[0]))
                and not jieba.dt.FREQ.get(short)}

    @cached_property
    def name_endings(self) -> frozenset[str]:
        """Every Chinese character a product's name ends with, pack size aside (砖 of 瑜伽砖, 帽 of 硅胶泳帽)."""
        return frozenset(name[-1] for names in self.chinese_names.values() for name in names if is_han(name[-1]))

    @cached_property
    def name_characters(self) -> frozenset[str]:
        """Every Chinese character the catalog's product names and short forms are written with."""
        return frozenset(ch for name in self.names for ch in name if "\u4e00" <= ch <= "\u9fff")

    @cached_property
    def chinese_names(self) -> dict[str, tuple[str, ...]]:
        """Product id → its Chinese names and short forms, pack size aside (read by pointers with a kind)."""
        out: dict[str, list[str]] = {}
        for name, pid in self.names.items():
            if not re.search("[a-z]", name):
                out.setdefault(pid, []).append(base_name(name))
        return {pid: tuple(names) for pid, names in out.items()}

    def kind_of(self, pid: str) -> tuple[str, str | None]:
        """The kind of goods a product is: the character its name ends with (球, 鞋), and its category."""
        names = self.chinese_names.get(pid, ())
        return (max(names, key=len)[-1] if names else ""), self.category_by_product.get(pid)

    @cached_property
    def brands_longest_first(self) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
        """(brand, its folded spelling, where it is written), the longest first, sorted and compiled once — not at
        every message. A Latin brand is matched as a whole word (Keep is not in goalkeeper)."""
        return tuple((b, b.lower(), re.compile(_as_pattern(b.lower())))
                     for b in sorted(self.brands, key=lambda b: (-len(b), b)))

    def brands_at(self, folded: str) -> list[tuple[int, str]]:
        """(where, brand) for the brands a folded message writes (by their folded spelling), in the order written (the
        longer first where two start together) — never in the order of a set, which changes from one process to the
        next."""
        found = [(m.start(), -len(low), b) for b, low, pattern in self.brands_longest_first
                 if (m := pattern.search(folded))]
        return [(at, b) for at, _, b in sorted(found)]

    def brands_in(self, folded: str) -> list[str]:
        """The brands a folded message writes, in the order written."""
        return [b for _, b in self.brands_at(folded)]

    @cached_property
    def products_of_brand(self) -> dict[str, tuple[str, ...]]:
        """Brand → its products, read once (another brand asked after a product: its products of that kind)."""
        out: dict[str, list[str]] = {}
        for pid, brand in self.brand_of.items():
            out.setdefault(brand, []).append(pid)
        return {brand: tuple(sorted(pids)) for brand, pids in out.items()}

    def brands_one_ending_with(self, word: str, brand: str) -> str | None:
        """The brand's one product whose longer name ends with `word` (彪马, 足球 → 室内五人制足球); None when it has
        none or several."""
        brand = brand.lower()
        of_brand = [pid for pid in sorted(self.ending_with(word)) if (self.brand_of.get(pid) or "").lower() == brand]
        return of_brand[0] if len(of_brand) == 1 else None

    def products_of_kind(self, kind: str) -> frozenset[str]:
        """The products one of whose Chinese names ends with the kind (服: 瑜伽服套装, by its short form 瑜伽服)."""
        return frozenset(pid for pid in self.chinese_names if self.of_kind(pid, kind))

    def of_kind(self, pid: str, kind: str) -> bool:
        """Whether one of the product's Chinese names ends with the kind (鞋: 足球鞋; 球: 乒乓球)."""
        return any(name.endswith(kind) for name in self.chinese_names.get(pid, ()))

    def product_of(self, word: str) -> str:
        """The product a matched name stands for ('yoga blocks' is the plural of 'yoga block')."""
        for form in (word, word[:-1], word[:-2]):
            if form in self.names:
                return self.names[form]
        raise KeyError(word)

    @cached_property
    def _reversed_names(self) -> tuple[list[str], list[str]]:
        """Every name written backwards, sorted, and its product: the names ending with a word are one run of it."""
        pairs = sorted((name[::-1], pid) for name, pid in self.names.items())
        return [name for name, _ in pairs], [pid for _, pid in pairs]

    def ending_with(self, word: str) -> set[str]:
        """Products with a longer name that ends with `word` (足球 → 青少年训练足球, 室内五人制足球): a binary search
        of the names written backwards, not a pass over the catalog (the reader asks it of most messages)."""
        if not word:
            return set()
        own = self.names.get(word)
        backwards, pids = self._reversed_names
        key = word[::-1]
        found = set()
        for at in range(bisect.bisect_left(backwards, key), len(backwards)):
            if not backwards[at].startswith(key):
                break
            if backwards[at] != key and pids[at] != own:
                found.add(pids[at])
        return found

    def full_name(self, pid: str) -> str:
        """A product's longest Chinese name (its name as the catalog writes it, not a short form); '' when none."""
        return max(self.chinese_names.get(pid, ("",)), key=len)

    def line_of(self, pid: str) -> list[str]:
        """The products of a product's line: those whose longer names end with its name (足球 → 青少年训练足球, 室内五人
        制足球), sorted."""
        return sorted(self.ending_with(self.full_name(pid)))

    def containing(self, phrase: str) -> str | None:
        """The one product whose full name holds `phrase` ('羽毛球网' → 羽毛球网架), if exactly one does."""
        owners = {pid for name, pid in self.names.items() if phrase in name and phrase != name}
        return next(iter(owners)) if len(owners) == 1 else None

    def __post_init__(self) -> None:
        if not self.sounds and self.names:
            by_sound: dict[str, set[str]] = {}
            for name, pid in self.names.items():
                if len(name) >= 2 and all("\u4e00" <= ch <= "\u9fff" for ch in name):
                    # the name read as a word (瑜伽: yu jia; 伽 alone is ga), as a message's characters are read
                    # one by one — and read so too (鱼伽垫: yu ga dian, the name's own 伽 typed beside a homophone)
                    for key in {pinyin_of(name), " ".join(map(pinyin_of, name))}:
                        by_sound.setdefault(key, set()).add(pid)
            sounds: dict[str, dict[int, dict[str, str]]] = {}
            for key, pids in by_sound.items():
                if len(pids) == 1:   # a sound two products share names neither
                    first = key.split(" ", 1)[0]
                    sounds.setdefault(first, {}).setdefault(len(key.split(" ")), {})[key] = next(iter(pids))
            object.__setattr__(self, "sounds", {k: sorted(v.items(), reverse=True) for k, v in sounds.items()})
        if self.pattern is None and self.names:
            words = sorted(self.names, key=len, reverse=True)
            object.__setattr__(self, "pattern", re.compile("|".join(map(_as_pattern, words))))
        if self.category_pattern is None and self.categories:
            of = {w: c for c in self.categories for w in (c, *CATEGORY_WORDS.get(c, ()))}
            words = sorted(of, key=len, reverse=True)
            object.__setattr__(self, "category_of", of)
            object.__setattr__(self, "category_pattern", re.compile("|".join(map(re.escape, words))))
        if not self.kind_characters and self.names:
            enders: dict[str, set[str]] = {}
            for name, pid in self.names.items():
                base = base_name(name)
                if base and "\u4e00" <= base[-1] <= "\u9fff":
                    enders.setdefault(base[-1], set()).add(pid)
            object.__setattr__(self, "kind_characters", frozenset(c for c, pids in enders.items() if len(pids) >= 2))
        if not self.known_words:
            known = {w.lower() for w in (*self.brands, *self.category_of, *MODIFIERS)}
            object.__setattr__(self, "known_words", tuple(sorted(known, key=len, reverse=True)))

    @classmethod
    def of(cls, products: Iterable[tuple[str, str, str, str]],
           aliases: Mapping[str, Iterable[str]] | None = None) -> Vocabulary:
        """From (product_id, name, brand, category) rows: each name, its pack-less base ('乒乓球'), and
        its last jieba word when no other product ends with it ('运动护膝' → '护膝'); then the catalog's
        own other names for a product (`aliases`: English, short names) unless another product has it."""
        jieba.posseg.lcut("预热")   # the tagger loads its dictionaries on first use: here, not in a turn
        gloss("a"), senses("一")   # so do the English and the Chinese dictionaries (kinds in English, synonyms)
        thesaurus_codes()   # and the thesaurus (story words, materials): ~80 ms of JSON, never on the event loop
        rows = list(products)
        names: dict[str, str] = {}
        tails: dict[str, set[str]] = {}
        for pid, name, _, _ in rows:
            folded = fold(name)
            names[folded] = pid
            base = base_name(folded)
            names.setdefault(base, pid)
            words = jieba.lcut(base)
            tail = words[-1] if len(words) > 1 else base[-2:]   # 运动护膝 → 护膝; 防雾泳镜 (one word) → 泳镜
            if len(tail) >= 2 and tail != base and (len(words) > 1 or len(base) >= 4 and jieba.lcut(tail) == [tail]):
                tails.setdefault(tail, set()).add(pid)
        owners: dict[str, set[str]] = {}
        for pid, others in (aliases or {}).items():
            for alias in others:
                if len(folded := fold(alias).strip()) >= 2:
                    owners.setdefault(folded, set()).add(pid)
        for tail, pids in tails.items():
            # a short form is one product's own only if no other product's name or alias ends with it:
            # 跑鞋 ends 越野跑鞋 and 缓震跑鞋 (another product's alias), so it is a kind of goods, not a name
            enders = pids | {pid for alias, owned in owners.items() if alias.endswith(tail) for pid in owned}
            if len(enders) == 1:
                names.setdefault(tail, next(iter(pids)))
        for alias, pids in owners.items():
            if len(pids) == 1:
                names.setdefault(alias, next(iter(pids)))
        english: dict[str, list[tuple[str, frozenset[str]]]] = {}
        for pid, others in (aliases or {}).items():
            phrases = [singular_words(fold(a)) for a in others if re.fullmatch(r"[a-z][a-z\s-]*", fold(a).strip())]
            if phrases := [w for w in phrases if w]:
                every = frozenset(w for words in phrases for w in words)
                for head in {words[-1] for words in phrases}:
                    english.setdefault(head, []).append((pid, every))
        return cls(names, frozenset(r[2] for r in rows if r[2]), frozenset(r[3] for r in rows if r[3]),
                   english={head: tuple(owners) for head, owners in english.items()},
                   brand_of={r[0]: r[2] for r in rows if r[2]}, category_by_product={r[0]: r[3] for r in rows if r[3]})
