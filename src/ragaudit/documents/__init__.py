"""Test sets from documents: (context, question) pairs, and the question-type labeller of
"Know Your RAG"."""
