"""The last gate: number normalization, the evidence ledger and the answer validator.

Depends on nothing else in kefu-bot: it sees tool results only as plain dicts (the contract).
"""
