"""The web audit console: a live feed of turns with every tool call, evidence and verdict, for the shop's
operators behind a login token (AUDIT_WEB_PORT)."""
