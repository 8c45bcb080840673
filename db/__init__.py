"""The shop's catalog: schema, read-only access, queries and the Decimal pricing rules."""
