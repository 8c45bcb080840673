"""From a customer's words to a short, honest list of candidate product ids (never facts)."""
