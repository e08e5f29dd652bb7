"""The synthetic closed-domain company: relational data and the documents about it."""
