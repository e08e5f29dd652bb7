"""SQL templates: the schema enumerator, the LLM's SQL, instantiation into groups."""
