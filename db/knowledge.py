"""Store-policy chunks (returns, shipping, invoices…), read by id. Retrieval proposes the ids
(retrieval/passages.py); the text cited is always the catalog's own."""

from __future__ import annotations

import aiosqlite

from db.facts import PolicyDocument, PolicyDocuments


async def all_documents(conn: aiosqlite.Connection) -> list[PolicyDocument]:
    rows = await conn.execute_fetchall("SELECT doc_id, title, content FROM knowledge_docs ORDER BY rowid")
    return [PolicyDocument(r["doc_id"], r["title"], r["content"]) for r in rows]


async def documents_by_id(conn: aiosqlite.Connection, doc_ids: list[str]) -> PolicyDocuments:
    """The chunks with these ids, in the order given; unknown ids are left out."""
    if not doc_ids:
        return PolicyDocuments(())
    marks = ", ".join("?" for _ in doc_ids)
    rows = await conn.execute_fetchall(f"SELECT doc_id, title, content FROM knowledge_docs WHERE doc_id IN ({marks})",
                                       list(doc_ids))
    by_id = {r["doc_id"]: PolicyDocument(r["doc_id"], r["title"], r["content"]) for r in rows}
    return PolicyDocuments(tuple(by_id[i] for i in doc_ids if i in by_id))


async def contact_policy(conn: aiosqlite.Connection) -> PolicyDocument | None:
    """The store policy that tells a customer how and when to reach a person, if the shop has one."""
    rows = await conn.execute_fetchall("SELECT doc_id, title, content FROM knowledge_docs WHERE content LIKE '%人工客服%' "
                                       "ORDER BY content LIKE '%服务时间%' DESC, rowid LIMIT 1")
    return PolicyDocument(rows[0]["doc_id"], rows[0]["title"], rows[0]["content"]) if rows else None
