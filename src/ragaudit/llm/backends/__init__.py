"""LLM backends: an OpenAI-compatible HTTP server, and the embedded llama.cpp model."""
