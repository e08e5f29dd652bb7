"""The run store: typed readers of a run directory's files and the joined answer table.

The run directory's layout (every file by name), its lock and its provenance are
:mod:`ragaudit.rundir`; this package reads what the steps wrote there, each file as its
records (:mod:`ragaudit.store.records`: the dataset, read once while a step holds it,
and the responses, judgements and scores, one per (system, query) across the files of
a kind; :mod:`ragaudit.store.files`: drilldown.jsonl, usage.json, documents.stats.json),
joins them into the analysis's examples (:mod:`ragaudit.store.examples`), and keeps the
joined answer table as ``answers.parquet`` beside the JSON Lines, which stay the source
of truth (:mod:`ragaudit.store.answers`).
"""
