"""The last gate: number normalization, the evidence ledger and the answer validator.

Depends on nothing else in kefu-bot: it reads the database's typed records through Protocols (ledger.py).
"""
