"""The ``ragaudit.yaml`` configuration: the sections each layer defines (``llm/options``,
``generate/options``, ``systems/options``, ...) composed into one file, loading with
precise errors, and the commented example that ``ragaudit init`` writes.

Every mistake in the file (unknown key, wrong type, bad value) is reported on one line
with the file, the line and the key's dotted path, e.g.
``ragaudit.yaml:7: llm.max_concurrency: Input should be greater than or equal to 1``.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from ragaudit.db.options import DatabaseConfig, mask_url_password
from ragaudit.errors import ConfigError
from ragaudit.generate.options import GenerateOptions, GoldRule, TemplatesConfig
from ragaudit.harness.options import HarnessConfig
from ragaudit.judge.options import ReferenceFreeOptions
from ragaudit.llm.options import LLMConfig, url_credentials_problem
from ragaudit.options import StrictOptions
from ragaudit.secrets import mask, mask_secret_fields, mask_url
from ragaudit.systems.corpus import CorpusConfig
from ragaudit.systems.options import KINDS, SystemConfig, expand_grids
from ragaudit.yamlfile import parse_yaml, read_text, validate_model, validation_message

DEFAULT_CONFIG_NAME = "ragaudit.yaml"


def _file_in_the_way(folder: Path) -> Path | None:
    """The nearest of ``folder`` and its parents that exists, when it is not a folder
    (``/etc/passwd`` for ``/etc/passwd/runs``), else None: the run's folders could never
    be made there. A path that cannot be looked at (no permission) is left to the step
    that makes the folders, which says why."""
    for path in (folder, *folder.parents):
        try:
            found = path.stat()  # follows links: a link to a folder is a folder
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there, or under a file: a parent says which
        except OSError:
            return None
        return None if stat.S_ISDIR(found.st_mode) else path
    return None


class RunConfig(StrictOptions):
    """Where a run's files live: ``<root>/<name>/``. Both are checked against the
    filesystem where they are given (relative ones against the working directory, as the
    steps read them): a file at the root, above it, or in the run folder's place is an
    error naming the key, not a ``NotADirectoryError`` from the first step that writes."""

    name: str = Field("default", min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    root: Path = Path("runs")

    @field_validator("root")
    @classmethod
    def _root_is_a_folder(cls, root: Path) -> Path:
        blocker = _file_in_the_way(root)
        if blocker is not None:
            where = "" if blocker == root else f"{root}: "
            raise ValueError(
                f"{where}{blocker} is a file, not a folder: run.root names the folder that "
                "holds the runs"
            )
        return root

    @model_validator(mode="after")
    def _run_folder_is_free(self) -> RunConfig:
        folder = self.root / self.name
        if _file_in_the_way(folder) == folder:  # a file above it is run.root's error
            raise ValueError(
                f"{folder} is a file, not a folder: run.name names the run's folder under "
                "run.root; give another name"
            )
        return self


class Config(StrictOptions):
    """The whole ``ragaudit.yaml``."""

    schema_version: Literal[1] = 1
    run: RunConfig = Field(default_factory=RunConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    templates: TemplatesConfig = Field(default_factory=TemplatesConfig)
    generate: GenerateOptions = Field(default_factory=GenerateOptions)
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    systems: list[SystemConfig] = Field(default_factory=list)
    harness: HarnessConfig = Field(default_factory=HarnessConfig)
    reference_free: ReferenceFreeOptions = Field(default_factory=ReferenceFreeOptions)

    @field_validator("systems")
    @classmethod
    def _unique_names(cls, systems: list[SystemConfig]) -> list[SystemConfig]:
        systems = expand_grids(systems)  # type: ignore[arg-type,assignment]  # same union
        seen: set[str] = set()
        for item in systems:
            if item.name in seen:
                raise ValueError(f"two systems are named {item.name!r}")
            seen.add(item.name)
        return systems

    def masked_dict(self) -> dict[str, Any]:
        """The resolved configuration as plain data with every secret shown as ``***``
        (the API key, the password inside the database URL or an HTTP system's URL, in
        the user part or the query string, headers written out, and the values of an HTTP
        system's request fields named like secrets); the values masked are registered, so
        that they are masked in every message too."""
        data = self.model_dump(mode="json")
        data["llm"]["api_key"] = mask(self.llm.resolved_api_key())
        data["database"]["url"] = mask_url_password(self.database.url)
        if data["llm"]["base_url"] is None:
            data["llm"]["base_url"] = self.llm.resolved_base_url()
        for system in data["systems"]:
            system.pop("grid", None)  # grids are expanded: each system stands on its own
            if system.get("url"):  # an endpoint may carry a password or ?token=
                system["url"] = mask_url(system["url"])
            if system.get("request") is not None:  # GET parameters or a POST body
                system["request"] = mask_secret_fields(system["request"])
            if "headers" in system:
                # A header written out in the file may hold a token; ${VAR} references are safe.
                system["headers"] = {
                    k: v if "${" in v else "***" for k, v in system["headers"].items()
                }
        return data


def parse_config(text: str, source: str = DEFAULT_CONFIG_NAME) -> Config:
    """Parse and validate configuration text; raise :class:`ConfigError` with file:line: path."""
    data, root = parse_yaml(text, source, ConfigError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}:1: the file must be a mapping of sections (run, database, llm)"
        )
    return validate_model(Config, data, source, root, ConfigError, tags=frozenset(KINDS))


def load_config(path: Path | None) -> Config:
    """Load ``path`` (defaults when None); a missing file is a :class:`ConfigError`."""
    if path is None:
        return Config()
    text = read_text(path, "a configuration file: ragaudit init writes one", ConfigError)
    return parse_config(text, source=str(path))


def example_config(*, documents: bool = False) -> str:
    """The commented example ``ragaudit init`` writes (``ragaudit/data/example.yaml``): every
    key with its default and a word on what it does. ``documents``: the one for a user
    with documents and no database (``example-documents.yaml``: a corpus path, no
    database, built-in systems that retrieve from the corpus), so that nothing has to be
    deleted by hand before ``generate --documents``."""
    from importlib.resources import files

    name = "example-documents.yaml" if documents else "example.yaml"
    return files("ragaudit").joinpath("data", name).read_text(encoding="utf-8")


__all__ = [
    "DEFAULT_CONFIG_NAME",
    "Config",
    "CorpusConfig",
    "DatabaseConfig",
    "GenerateOptions",
    "GoldRule",
    "HarnessConfig",
    "LLMConfig",
    "RunConfig",
    "SystemConfig",
    "TemplatesConfig",
    "example_config",
    "load_config",
    "mask_url_password",
    "parse_config",
    "url_credentials_problem",
]


def assign(section: BaseModel, field: str, value: Any, option: str) -> None:
    """Set ``section.field`` from a command-line option or an API argument (``option``
    names it), checked as the file's value is: a bad one is a one-line ConfigError."""
    try:
        setattr(section, field, value)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, option, None)) from None
