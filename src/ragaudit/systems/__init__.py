"""Systems under test: corpora, retrievers, generators, pipelines and adapters."""
