"""Text templates (wordings): the verbalizer, the LLM's wordings, and the checks that a
wording asks what its SQL template answers."""
