"""Judging answers: deterministic matchers first, the LLM judge for what they leave open."""
