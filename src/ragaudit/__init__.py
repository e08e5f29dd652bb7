"""ragaudit: audit Retrieval-Augmented Generation systems with grounded, executed answers.

``import ragaudit as ra``: :func:`ra.init` (a commented ragaudit.yaml to start from),
:class:`ra.Project` (the journey on a run directory),
:func:`ra.evaluate` (any system's logs), :func:`ra.system` (a Python callable under test),
:class:`ra.Answer`, :func:`ra.gate`, :func:`ra.assert_no_regression`, :func:`ra.compare`,
:func:`ra.make_world` and :func:`ra.demo` (a generated company, and the journey on one),
and ``ra.llm.Scripted`` (a scripted LLM for tests). What ``__all__`` names, and what it
returns, is the public API: it follows semantic versioning; everything else is private.
"""

from typing import TYPE_CHECKING

from ragaudit.lazy import lazy_exports
from ragaudit.version import __version__

if TYPE_CHECKING:
    from ragaudit import llm
    from ragaudit.api import (
        Answers,
        Dataset,
        Evaluation,
        Project,
        World,
        acompare,
        ademo,
        aevaluate,
        agate,
        amake_world,
        assert_no_regression,
        compare,
        demo,
        evaluate,
        gate,
        init,
        make_world,
        system,
    )
    from ragaudit.errors import UserError
    from ragaudit.systems.base import Answer

# Loaded on first use: the command line imports this package too, and pays for none of it.
_exports = lazy_exports(
    __name__,
    {
        "Project": "api",
        "ademo": "api",
        "amake_world": "api",
        "acompare": "api",
        "agate": "api",
        "aevaluate": "api",
        "evaluate": "api",
        "Evaluation": "api",
        "Answers": "api",
        "Dataset": "api",
        "system": "api",
        "init": "api",
        "gate": "api",
        "compare": "api",
        "assert_no_regression": "api",
        "World": "api",
        "make_world": "api",
        "demo": "api",
        "Answer": "systems.base",
        "UserError": "errors",
    },
)


def __getattr__(name: str) -> object:
    if name == "llm":  # the subpackage itself (ra.llm.Scripted)
        import importlib

        return importlib.import_module("ragaudit.llm")
    return _exports(name)


__all__ = [
    "Answer",
    "Answers",
    "Dataset",
    "Evaluation",
    "Project",
    "UserError",
    "World",
    "__version__",
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
    "llm",
    "make_world",
    "system",
]
