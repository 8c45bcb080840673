"""One turn of conversation: chat models, tools, the grounded turn loop, memory and the turn trace."""
