"""The answer validator: an answer reaches a customer only if every figure in it is in the ledger.

`validate` returns a Verdict with machine-readable reason codes and an English message that the turn
loop sends back to the model so it can correct itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from guardrails.figures import DISCOUNT, MONEY, QUANTITY, STOCK, Mention, find_mentions, normalize
from guardrails.ledger import Evidence, EvidenceLedger

GROUNDED, INSUFFICIENT = "grounded", "insufficient_evidence"

UNKNOWN_CITATION = "UNKNOWN_CITATION"
NO_CITATION = "NO_CITATION"
UNVERIFIED_PRODUCT_ID = "UNVERIFIED_PRODUCT_ID"
UNVERIFIED_AMOUNT = "UNVERIFIED_AMOUNT"
UNVERIFIED_DISCOUNT = "UNVERIFIED_DISCOUNT"
UNVERIFIED_STOCK = "UNVERIFIED_STOCK"
UNVERIFIED_QUANTITY = "UNVERIFIED_QUANTITY"
NEEDS_PRODUCT_EVIDENCE = "NEEDS_PRODUCT_EVIDENCE"
FACTS_WITHOUT_EVIDENCE = "FACTS_WITHOUT_EVIDENCE"
CONFIRMS_CUSTOMER_CLAIM = "CONFIRMS_CUSTOMER_CLAIM"
EMPTY_ANSWER = "EMPTY_ANSWER"
BAD_STATUS = "BAD_STATUS"

_CODE_FOR_KIND = {MONEY: UNVERIFIED_AMOUNT, DISCOUNT: UNVERIFIED_DISCOUNT, STOCK: UNVERIFIED_STOCK,
                  QUANTITY: UNVERIFIED_QUANTITY}
_WORD_FOR_KIND = {MONEY: "amount", DISCOUNT: "discount", STOCK: "stock figure", QUANTITY: "quantity"}
_PRODUCT_ID = re.compile(r"(?:商品\s*ID|商品编号|产品编号|编号|ID)\s*[:：#]?\s*([A-Za-z0-9][A-Za-z0-9_-]*)", re.I)
# Figures are checked clause by clause: a clause that names a product may only state that product's
# figures ("足球200元，篮球120元" with both products cited is still a swap).
_CLAUSE = re.compile(r"[^。！？!?；;\n，,]+[。！？!?；;\n，,]*")
_AFFIRMATION = re.compile(r"^\s*(?:是的|对的|对|没错|正确|确实|是这样|嗯)")
_FACT_KINDS = {"product", "calc", "order", "doc"}


@dataclass(frozen=True)
class Problem:
    code: str
    detail: str


@dataclass(frozen=True)
class Verdict:
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def codes(self) -> list[str]:
        return sorted({p.code for p in self.problems})

    @property
    def message(self) -> str:
        """What to tell the model: each problem on its own line, then how to fix it."""
        if self.ok:
            return "OK"
        lines = [f"{p.code}: {p.detail}" for p in self.problems]
        lines.append("Rewrite the answer using only figures from the cited tool results "
                     "(call the tools again if you need a figure), or submit status insufficient_evidence.")
        return "\n".join(lines)


def _products_named(sentence: str, names: dict[str, str]) -> set[str]:
    """Product ids named in a sentence, by explicit id or by verified product name (longest first)."""
    found = {m.group(1) for m in _PRODUCT_ID.finditer(sentence)}
    taken = [False] * len(sentence)
    for name in sorted(names, key=len, reverse=True):
        if not name:
            continue
        for m in re.finditer(re.escape(name), sentence):
            if not any(taken[m.start():m.end()]):
                found.add(names[name])
                taken[m.start():m.end()] = [True] * (m.end() - m.start())
    return found


def _vouched(mention: Mention, pool: Sequence[Evidence]) -> bool:
    if mention.value is None:
        return False
    if mention.kind == QUANTITY and mention.value == 1:
        return True  # "一双", "每1支": a unit, not a claim
    return any(e.vouches_for(mention.kind, mention.value) for e in pool)


def validate(question: str, answer: str, citation_ids: Iterable[str], ledger: EvidenceLedger,
             status: str = GROUNDED) -> Verdict:
    """Check an answer against the turn's ledger; the Verdict lists every problem found."""
    problems: list[Problem] = []
    answer = normalize(answer or "").strip()
    citations = [str(c) for c in (citation_ids or [])]
    if not answer:
        return Verdict((Problem(EMPTY_ANSWER, "the answer is empty"),))
    if status not in (GROUNDED, INSUFFICIENT):
        problems.append(Problem(BAD_STATUS, f"status must be {GROUNDED} or {INSUFFICIENT}, got {status!r}"))

    for c in citations:
        if c not in ledger:
            problems.append(Problem(UNKNOWN_CITATION, f"{c} is not a verified evidence id of this turn"))
    cited = ledger.cited(citations)
    mentions = find_mentions(answer)
    id_mentions = [m.group(1) for m in _PRODUCT_ID.finditer(answer)]
    verified_ids = ledger.verified_product_ids
    for pid in id_mentions:
        if pid not in verified_ids:
            problems.append(Problem(UNVERIFIED_PRODUCT_ID, f"product id {pid} was not verified by get_product_details"))

    if status == INSUFFICIENT:
        if mentions or id_mentions:
            figures = "、".join(m.text for m in mentions) or "、".join(id_mentions)
            problems.append(Problem(FACTS_WITHOUT_EVIDENCE,
                                    f"an insufficient_evidence answer may state no product facts, found: {figures}"))
        return Verdict(tuple(problems))

    if mentions and not citations:
        problems.append(Problem(NO_CITATION, "the answer states figures but cites no evidence"))
    elif mentions and cited:
        kinds = {e.kind for e in cited}
        if not kinds & _FACT_KINDS or (not ledger.has_product_data and not kinds & {"order", "doc"}):
            problems.append(Problem(NEEDS_PRODUCT_EVIDENCE,
                                    "product facts need verified product data: call get_product_details and cite it"))

    customer_figures = {m.value for m in find_mentions(question or "") if m.value is not None}
    names = ledger.product_names
    for sentence in _CLAUSE.findall(answer) or [answer]:
        named = _products_named(sentence, names)
        pool = [e for e in cited if e.product_ids & named or e.kind == "doc"] if named else cited
        for mention in find_mentions(sentence):
            if _vouched(mention, pool):
                continue
            word = _WORD_FOR_KIND[mention.kind]
            if mention.value is None:
                detail = f"'{mention.text}' is a vague {word}; state an exact verified figure or none"
            elif mention.value in customer_figures:
                detail = (f"{word} '{mention.text}' comes from the customer's message, which is not evidence; "
                          "do not repeat it — state the verified figure instead")
            elif named and any(e.vouches_for(mention.kind, mention.value) for e in cited):
                detail = (f"{word} '{mention.text}' belongs to a different product than the one this sentence "
                          f"names ({', '.join(sorted(named))})")
            else:
                detail = f"{word} '{mention.text}' is not in the cited evidence"
            problems.append(Problem(_CODE_FOR_KIND[mention.kind], detail))

    unverified_claims = [m for m in find_mentions(question or "")
                         if m.value is not None and not any(e.vouches_for(m.kind, m.value) for e in cited)]
    if unverified_claims and _AFFIRMATION.match(answer):
        problems.append(Problem(CONFIRMS_CUSTOMER_CLAIM,
                                f"the answer affirms the customer's unverified figure '{unverified_claims[0].text}'"))
    return Verdict(tuple(problems))


