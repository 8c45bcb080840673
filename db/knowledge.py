"""Store-policy documents (returns, shipping, invoices…), found by character-bigram overlap."""

from __future__ import annotations

import aiosqlite

from db.facts import PolicyDocument, PolicyDocuments

MAX_DOCS = 3


def _bigrams(text: str) -> set[str]:
    chars = [c for c in text.lower() if not c.isspace() and c not in "，。？！、,.?!；;：:"]
    return {a + b for a, b in zip(chars, chars[1:], strict=False)}


async def search_knowledge(conn: aiosqlite.Connection, query: str, limit: int = MAX_DOCS) -> PolicyDocuments:
    """The policy documents sharing the most two-character pieces with `query` (title counts double)."""
    wanted = _bigrams(query or "")
    async with conn.execute("SELECT doc_id, title, content FROM knowledge_docs ORDER BY doc_id") as cur:
        rows = await cur.fetchall()
    scored = []
    for row in rows:
        score = 2 * len(wanted & _bigrams(row["title"])) + len(wanted & _bigrams(row["content"]))
        if score:
            scored.append((score, row))
    scored.sort(key=lambda item: -item[0])
    return PolicyDocuments(tuple(PolicyDocument(row["doc_id"], row["title"], row["content"])
                                 for _, row in scored[:limit]))


CONTACT_QUERY = "人工客服服务时间"


async def contact_policy(conn: aiosqlite.Connection) -> PolicyDocument | None:
    """The store policy that tells a customer how and when to reach a person, if the shop has one."""
    found = await search_knowledge(conn, CONTACT_QUERY, limit=1)
    return found.documents[0] if found.documents and "人工" in found.documents[0].content else None
