"""The run directory: where every step reads and writes its plain files.

Layout (DESIGN.md)::

    runs/<name>/
      ragaudit.yaml            resolved configuration, secrets masked
      templates/sql.yaml       templates/text.yaml
      dataset.jsonl            dataset.stats.json
      responses/<system>.jsonl judgements/<system>.jsonl
      summary.json             summary.md    drilldown.jsonl    report.html
      usage.json               LLM usage per step
      cache/llm.sqlite         every LLM call, keyed by its full request
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ragaudit.config import Config
from ragaudit.records.io import atomic_write_text

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


def safe_filename(name: str) -> str:
    """Turn a system name into a file name that cannot escape its folder."""
    cleaned = _SAFE_NAME.sub("_", name).strip("._")
    return cleaned or "_"


@dataclass(frozen=True)
class RunDir:
    """Paths of one run; creating it makes the folders, never deletes anything."""

    root: Path

    @classmethod
    def from_config(cls, config: Config) -> RunDir:
        """The run directory named by ``run.root`` / ``run.name``."""
        return cls(config.run.root / config.run.name)

    @property
    def config(self) -> Path:
        return self.root / "ragaudit.yaml"

    @property
    def templates_sql(self) -> Path:
        return self.root / "templates" / "sql.yaml"

    @property
    def templates_text(self) -> Path:
        return self.root / "templates" / "text.yaml"

    @property
    def dataset(self) -> Path:
        return self.root / "dataset.jsonl"

    @property
    def dataset_stats(self) -> Path:
        """Counts of the generated dataset (the paper's Table 2) and per template."""
        return self.root / "dataset.stats.json"

    def responses(self, system: str) -> Path:
        """Responses of one system under test."""
        return self.root / "responses" / f"{safe_filename(system)}.jsonl"

    def judgements(self, system: str) -> Path:
        """Judgements of one system's responses."""
        return self.root / "judgements" / f"{safe_filename(system)}.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def drilldown(self) -> Path:
        """One line per analyzed query with its group's tag."""
        return self.root / "drilldown.jsonl"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def usage(self) -> Path:
        return self.root / "usage.json"

    @property
    def llm_cache(self) -> Path:
        return self.root / "cache" / "llm.sqlite"

    def create(self) -> RunDir:
        """Make the run's folders (idempotent)."""
        for sub in ("templates", "responses", "judgements", "cache"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self

    def write_config(self, config: Config) -> Path:
        """Write the resolved configuration with secrets masked, atomically."""
        text = yaml.safe_dump(config.masked_dict(), sort_keys=False, allow_unicode=True)
        atomic_write_text(self.config, "# resolved configuration (secrets masked)\n" + text)
        return self.config
