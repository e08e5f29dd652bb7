"""The public Python API of ragaudit (``import ragaudit as ra``): a project and its steps,
evaluation of any system's logs, the regression gate, and a scripted LLM for tests. The
command line is a client of the same steps, on the same run directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragaudit.lazy import lazy_exports

if TYPE_CHECKING:
    from ragaudit.api.evaluation import Evaluation, aevaluate, evaluate
    from ragaudit.api.functions import (
        acompare,
        agate,
        assert_no_regression,
        compare,
        gate,
        init,
        system,
    )
    from ragaudit.api.project import Project
    from ragaudit.api.tables import Answers, Dataset
    from ragaudit.api.world import World, ademo, amake_world, demo, make_world

__getattr__ = lazy_exports(
    __name__,
    {
        "Project": "project",
        "ademo": "world",
        "amake_world": "world",
        "acompare": "functions",
        "agate": "functions",
        "aevaluate": "evaluation",
        "evaluate": "evaluation",
        "Evaluation": "evaluation",
        "Answers": "tables",
        "Dataset": "tables",
        "system": "functions",
        "init": "functions",
        "gate": "functions",
        "compare": "functions",
        "assert_no_regression": "functions",
        "World": "world",
        "make_world": "world",
        "demo": "world",
    },
)

__all__ = [
    "Answers",
    "Dataset",
    "Evaluation",
    "Project",
    "World",
    "acompare",
    "ademo",
    "aevaluate",
    "agate",
    "amake_world",
    "assert_no_regression",
    "compare",
    "demo",
    "evaluate",
    "gate",
    "init",
    "make_world",
    "system",
]


def __dir__() -> list[str]:
    return sorted(__all__)
