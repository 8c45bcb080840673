"""The answer validator: an answer reaches a customer only if every claim in it is in the ledger —
each figure with the role the answer gives it (price, total, threshold, rate…) and the conditions it
holds under, and the facts without numbers (brand, gift, shipping, stock status, a price not given,
policy terms).

`validate` returns a Verdict with machine-readable reason codes and an English message that the turn
loop sends back to the model so it can correct itself."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from guardrails import statements
from guardrails.claims import PRODUCT_ID, Claim, Sentence, read_answer
from guardrails.figures import Mention, find_mentions, normalize
from guardrails.ledger import Conditions, Evidence, EvidenceKind, EvidenceLedger, Figure
from guardrails.roles import Kind, Role, first_purchase_told


class AnswerStatus(StrEnum):
    GROUNDED = "grounded"
    INSUFFICIENT = "insufficient_evidence"


GROUNDED, INSUFFICIENT = AnswerStatus.GROUNDED, AnswerStatus.INSUFFICIENT

UNKNOWN_CITATION = "UNKNOWN_CITATION"
NO_CITATION = "NO_CITATION"
UNVERIFIED_PRODUCT_ID = "UNVERIFIED_PRODUCT_ID"
UNVERIFIED_AMOUNT = "UNVERIFIED_AMOUNT"
UNVERIFIED_DISCOUNT = "UNVERIFIED_DISCOUNT"
UNVERIFIED_STOCK = "UNVERIFIED_STOCK"
UNVERIFIED_QUANTITY = "UNVERIFIED_QUANTITY"
UNVERIFIED_POLICY_FIGURE = "UNVERIFIED_POLICY_FIGURE"
WRONG_ROLE = "WRONG_ROLE"
MISSING_CONDITION = "MISSING_CONDITION"
UNVERIFIED_BRAND = statements.UNVERIFIED_BRAND
UNVERIFIED_GIFT = statements.UNVERIFIED_GIFT
UNVERIFIED_SHIPPING = statements.UNVERIFIED_SHIPPING
STOCK_STATUS_CONTRADICTS = statements.STOCK_STATUS_CONTRADICTS
PRICE_STATUS_CONTRADICTS = statements.PRICE_STATUS_CONTRADICTS
POLICY_CONTRADICTS = statements.POLICY_CONTRADICTS
NEEDS_PRODUCT_EVIDENCE = "NEEDS_PRODUCT_EVIDENCE"
FACTS_WITHOUT_EVIDENCE = "FACTS_WITHOUT_EVIDENCE"
CONFIRMS_CUSTOMER_CLAIM = "CONFIRMS_CUSTOMER_CLAIM"
EMPTY_ANSWER = "EMPTY_ANSWER"
BAD_STATUS = "BAD_STATUS"

_CODE_FOR_KIND = {Kind.MONEY: UNVERIFIED_AMOUNT, Kind.DISCOUNT: UNVERIFIED_DISCOUNT, Kind.STOCK: UNVERIFIED_STOCK,
                  Kind.QUANTITY: UNVERIFIED_QUANTITY, Kind.DURATION: UNVERIFIED_POLICY_FIGURE,
                  Kind.CLOCK: UNVERIFIED_POLICY_FIGURE}
_WORD_FOR_KIND = {Kind.MONEY: "amount", Kind.DISCOUNT: "discount", Kind.STOCK: "stock figure",
                  Kind.QUANTITY: "quantity", Kind.DURATION: "duration", Kind.CLOCK: "time of day"}
_AFFIRMATION = re.compile(r"^\s*(?:是的|对的|对|没错|正确|确实|是这样|嗯)")
_FACT_KINDS = {EvidenceKind.PRODUCT, EvidenceKind.CALC, EvidenceKind.ORDER, EvidenceKind.DOC}
# A figure of one of these roles is accepted from evidence of these roles.
_ACCEPTS = {Role.PRICE: {Role.PRICE, Role.SUBTOTAL}, Role.TOTAL: {Role.TOTAL, Role.ORDER_TOTAL},
            Role.REDUCTION: {Role.REDUCTION, Role.SAVING}}
_PER_QUOTE = {Role.SUBTOTAL, Role.TOTAL, Role.SAVING, Role.SHORTFALL, Role.UNITS_SHORT}
_DIRECTED = {Role.DEARER_BY, Role.CHEAPER_BY}
# Quantity roles whose figure 1 is a claim too (elsewhere 一双, 每1支 is just a unit).
_COUNTED_ONE = (Role.FREE_UNITS, Role.PAID_UNITS, Role.UNITS_SHORT)


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
        lines.append("Rewrite the answer using only figures from the cited tool results, each in its own role "
                     "(price, total for a stated quantity, threshold, rate…) and with the conditions it holds "
                     "under in the same sentence (call the tools again if you need a figure), or submit "
                     "status insufficient_evidence.")
        return "\n".join(lines)


@dataclass(frozen=True)
class Asked:
    """What the customer's own message already set: it need not be repeated next to a figure."""

    quantities: frozenset[Decimal]
    first_purchase: bool

    @classmethod
    def read(cls, question: str) -> Asked:
        quantities = frozenset(m.value for m in find_mentions(question or "")
                               if m.kind == Kind.QUANTITY and m.value is not None and m.role in (None, Role.PAID_UNITS))
        return cls(quantities, first_purchase_told(question or ""))


class _Check:
    """The role and condition checks of one answer, over one ledger."""

    def __init__(self, ledger: EvidenceLedger, cited: Sequence[Evidence], asked: Asked):
        self.ledger, self.cited, self.asked = ledger, cited, asked

    def pool(self, subject: set[str]) -> list[Evidence]:
        if not subject:
            return list(self.cited)
        return [e for e in self.cited if e.product_ids & subject or e.kind == EvidenceKind.DOC]

    def quantities(self, sentence: Sentence) -> set[Decimal]:
        """The units a total in this sentence is for: stated here, else asked, else one."""
        return sentence.quantities or set(self.asked.quantities) or {Decimal(1)}

    def first(self, sentence: Sentence) -> bool:
        return sentence.first_purchase or self.asked.first_purchase

    def meets(self, sentence: Sentence, conditions: Conditions, product_id: str | None) -> bool:
        if conditions.first_purchase and not self.first(sentence):
            return False
        units = sentence.quantities | set(self.asked.quantities)
        if conditions.minimum_quantity is not None:
            m = Decimal(conditions.minimum_quantity)
            if m not in sentence.values(Role.MIN_QUANTITY) and not any(q >= m for q in units):
                return False
        if conditions.minimum_spend is not None:
            s = conditions.minimum_spend
            price = self.ledger.price_of(product_id) if product_id else None
            if not (s in sentence.values(Role.THRESHOLD) or any(a >= s for a in sentence.values(Role.SUBTOTAL))
                    or (price is not None and any(q * price >= s for q in units))):
                return False
        return True

    def _has_first_purchase_rule(self, pool: Sequence[Evidence], product_id: str | None) -> bool:
        return any(p.first_purchase for p in self.ledger.promotions_of(pool, {product_id} if product_id else set()))

    def accepts(self, claim: Claim, figure: Figure, sentence: Sentence, pool: Sequence[Evidence]) -> bool:
        role = claim.role
        assert role is not None
        if figure.role not in _ACCEPTS.get(role, {role}):
            return False
        if figure.basket:   # a basket's sum: the sentence names all its products, or none
            named = {pid for clause in sentence.clauses for pid in clause.named}
            return role != Role.PRICE and (not named or figure.basket <= named)
        if role == Role.PRICE and figure.role == Role.SUBTOTAL:   # 两个原价240元: the price of what is bought
            return Decimal(figure.quantity or 0) in (claim.units or sentence.quantities or self.asked.quantities)
        if role in _DIRECTED and figure.product_id is not None and figure.product_id not in claim.about:
            return False   # 跑步鞋贵199元 when 篮球鞋 is the dearer one
        if figure.role in _PER_QUOTE and figure.quantity is not None:
            if Decimal(figure.quantity) not in (claim.units or self.quantities(sentence)):
                return False
            # a total without first purchase, stated for a first purchase of a product that has a first-purchase
            # rule, is the wrong figure (the opposite case is a dropped condition, see `meets`)
            if self.first(sentence) and not figure.first_purchase \
                    and self._has_first_purchase_rule(pool, figure.product_id):
                return False
        return True

    def role_problem(self, claim: Claim, sentence: Sentence, pool: Sequence[Evidence],
                     subject: set[str]) -> Problem | None:
        m = claim.mention
        holding = [f for e in pool for f in e.figures if f.value == m.value and f.kind == m.kind]
        accepted = [f for f in holding if self.accepts(claim, f, sentence, pool)]
        if accepted:
            if any(self.meets(sentence, f.conditions, f.product_id) for f in accepted):
                return None
            return Problem(MISSING_CONDITION, self._missing(m, accepted[0]))
        return Problem(WRONG_ROLE, self._wrong_role(claim, holding, sentence, pool, subject))

    def _missing(self, m: Mention, figure: Figure) -> str:
        c, needs = figure.conditions, []
        if c.first_purchase:
            needs.append("first purchase only (say 首次购买)")
        if c.minimum_quantity is not None:
            needs.append(f"only from {c.minimum_quantity} units (say {c.minimum_quantity}件及以上, or the quantity bought)")
        if c.minimum_spend is not None:
            needs.append(f"only for orders of at least {c.minimum_spend:f}元 (say 满{c.minimum_spend:f}元)")
        return (f"'{m.text}' is {figure.describe()} and holds {' and '.join(needs)}: state that condition in the "
                "same sentence")

    def _wrong_role(self, claim: Claim, holding: list[Figure], sentence: Sentence, pool: Sequence[Evidence],
                    subject: set[str]) -> str:
        m, role = claim.mention, claim.role
        names = "、".join(self.ledger.name_of(p) for p in sorted(subject)) or "the product"
        what = holding[0].describe() if holding else "not a figure of the cited evidence"
        detail = f"'{m.text}' is {what}, not the {role} of {names} as this sentence states"
        right = [f for e in pool for f in e.figures if f.role in _ACCEPTS.get(role, {role})]   # type: ignore[arg-type]
        if role == Role.PRICE:
            prices = {self.ledger.price_of(p) for p in subject} - {None}
            if prices:
                detail += f"; its price is {'/'.join(f'{p:f}元' for p in sorted(prices))}"   # type: ignore[type-var]
        elif role in (Role.SHORTFALL, Role.UNITS_SHORT):
            gaps = [f"{f.value:f} from {f.quantity} units" for f in right if f.quantity is not None]
            detail += ("; state the quantity the gap is measured from"
                       + (f": verified gaps are {', '.join(gaps)}" if gaps else "; call calculate_threshold_gap"))
        elif role in _DIRECTED:
            sides = [f"{self.ledger.name_of(f.product_id)} is {'dearer' if f.role == Role.DEARER_BY else 'cheaper'} "
                     f"by {f.value:f}元" for f in right if f.product_id is not None]
            detail += f"; {', '.join(sides)}" if sides else "; call compare_amounts"
        elif role in _PER_QUOTE or role == Role.TOTAL:
            totals = [f"{f.value:f}元 for {f.quantity} units{' (first purchase)' if f.first_purchase else ''}"
                      for f in right if f.quantity is not None]
            detail += ("; state the quantity (and first purchase) the total is for"
                       + (f": verified totals are {', '.join(totals)}" if totals else
                          "; call calculate_final_price for the quantity asked"))
        elif right:
            detail += f"; its {role} is {', '.join(sorted({f'{f.value:f}' for f in right}))}"
        return detail


def _vouched(mention: Mention, pool: Sequence[Evidence]) -> bool:
    if mention.value is None:
        return False
    if mention.kind == Kind.QUANTITY and mention.value == 1:
        return True  # "一双", "每1支": a unit, not a claim
    return any(e.vouches_for(mention.kind, mention.value) for e in pool)


def _unvouched_problem(mention: Mention, pool: Sequence[Evidence], cited: Sequence[Evidence], named: set[str],
                       customer_figures: set[Decimal]) -> Problem:
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
    return Problem(_CODE_FOR_KIND[mention.kind], detail)


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
    id_mentions = [m.group(1) for m in PRODUCT_ID.finditer(answer)]
    for pid in id_mentions:
        if pid not in ledger.verified_product_ids:
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
        if not kinds & _FACT_KINDS or (not ledger.has_product_data and not kinds & {EvidenceKind.ORDER,
                                                                                       EvidenceKind.DOC}):
            problems.append(Problem(NEEDS_PRODUCT_EVIDENCE,
                                    "product facts need verified product data: call get_product_details and cite it"))

    customer_figures = {m.value for m in find_mentions(question or "") if m.value is not None}
    check = _Check(ledger, cited, Asked.read(question))
    for sentence in read_answer(answer, ledger.names, question):
        for clause in sentence.clauses:
            pool = check.pool(clause.subject)
            for claim in clause.claims:
                if claim.role == Role.BUDGET and claim.mention.value in customer_figures:
                    continue   # the customer's own limit (100元以内), restated: no claim about a product
                if not _vouched(claim.mention, pool):
                    problems.append(_unvouched_problem(claim.mention, pool, cited, clause.subject, customer_figures))
                elif claim.role is not None and not (claim.mention.kind == Kind.QUANTITY and claim.mention.value == 1
                                                     and claim.role not in _COUNTED_ONE):
                    problem = check.role_problem(claim, sentence, pool, clause.subject)
                    if problem:
                        problems.append(problem)
            findings = (statements.brand_findings(clause, pool, ledger) + statements.gift_findings(clause, pool, ledger)
                        + statements.shipping_findings(clause, pool, ledger,
                                                       lambda c, pid, s=sentence: check.meets(s, c, pid))
                        + statements.stock_findings(clause, pool, ledger)
                        + statements.price_status_findings(clause, pool, ledger) + statements.policy_findings(clause, pool))
            problems += [Problem(code, detail) for code, detail in findings]

    unverified_claims = [m for m in find_mentions(question or "")
                         if m.value is not None and not any(e.vouches_for(m.kind, m.value) for e in cited)]
    if unverified_claims and _AFFIRMATION.match(answer):
        problems.append(Problem(CONFIRMS_CUSTOMER_CLAIM,
                                f"the answer affirms the customer's unverified figure '{unverified_claims[0].text}'"))
    return Verdict(tuple(problems))
