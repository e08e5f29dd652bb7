"""The ``>>>`` examples in the docstrings of the pure analysis, the records and the public
API are documentation and tests: each one runs here."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest
from pydantic import BaseModel

import ragaudit.analysis
import ragaudit.api

MODULES = sorted(
    [f"ragaudit.analysis.{m.name}" for m in pkgutil.iter_modules(ragaudit.analysis.__path__)]
    + [f"ragaudit.api.{m.name}" for m in pkgutil.iter_modules(ragaudit.api.__path__)]
    + ["ragaudit.llm.backends.scripted", "ragaudit.records.models", "ragaudit.judge.matchers"]
    + ["ragaudit.errors", "ragaudit.llm.usage", "ragaudit.llm.tokens", "ragaudit.progress"]
    + ["ragaudit.llm.prices"]
    + ["ragaudit.steps.gate", "ragaudit.records.values", "ragaudit.secrets"]
)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_a_module_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_the_public_api_has_examples() -> None:
    """The entry points a new user meets first show how they are called."""
    from ragaudit.api.evaluation import evaluate
    from ragaudit.llm.backends.scripted import Scripted

    for obj in (evaluate, Scripted):
        assert ">>>" in (obj.__doc__ or ""), obj


ANALYSIS = sorted(
    f"ragaudit.analysis.{m.name}" for m in pkgutil.iter_modules(ragaudit.analysis.__path__)
)

# Pure data containers, exempt from an example of their own: models of summary.json and of
# `ragaudit compare` with no method of their own (so nothing to call but their fields, which
# the examples of the functions that return them show). A pydantic model's docstring is also
# its JSON Schema description (docs/summary.schema.json), which an example would clutter.
# The test below checks that each one still has no method; one that gains one needs an example.
DATA_CONTAINERS = {
    "ragaudit.analysis.ranking": {
        "PairOrder", "RankedSystem", "RankingStudy", "SetAgreement", "SetRanking",
    },
    "ragaudit.analysis.summary": {
        "AUROC", "Blame", "CostFigure", "CostFigures", "CritiqueStat", "DocumentFigures",
        "DrawSpread", "LabelFigures", "LambdaPoint", "LambdaSide", "LambdaStudy",
        "MeanInterval", "MetricReliability", "ModelCostFigures",
        "PrecisionTarget", "QueryPassRate", "RaterAgreement", "ReferenceFreeFigures",
        "ReliabilityCore", "ScanRow", "Side", "SourceFigures", "StabilityCore",
        "StabilityFigures", "StepCostFigures", "StrategyFigures", "SystemFigures",
        "SystemRanking", "UnitCost", "VariantFigures", "WeightScan",
    },
}  # fmt: skip


def _public(module: ModuleType) -> dict[str, object]:
    """The functions and classes a module defines (not imports) under a public name."""
    return {
        name: obj
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    }


def _own_methods(cls: type, module: ModuleType) -> dict[str, object]:
    """The methods and properties written in the class's module, public or dunder (``__str__``):
    not the ones dataclasses or pydantic generate, nor private validators."""
    out: dict[str, object] = {}
    for name, value in vars(cls).items():
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        function = value.fget if isinstance(value, property) else value
        function = getattr(function, "__func__", function)  # classmethod, staticmethod
        code = getattr(function, "__code__", None)
        if code is not None and code.co_filename == module.__file__:
            out[name] = value
    return out


def _has_example(obj: object, module: ModuleType) -> bool:
    """An example in the docstring, or for a class in one of its own methods' (a pydantic
    model keeps its docstring, its JSON Schema description, to prose)."""
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        docs += [inspect.getdoc(m) or "" for m in _own_methods(obj, module).values()]
    return any(">>>" in doc for doc in docs)


@pytest.mark.parametrize("name", ANALYSIS)
def test_every_public_function_and_class_of_the_analysis_has_an_example(name: str) -> None:
    """Issue 36: a short ``>>>`` example per public function of analysis/, run above."""
    module = importlib.import_module(name)
    exempt = DATA_CONTAINERS.get(name, set())
    missing = [
        n for n, obj in _public(module).items() if n not in exempt and not _has_example(obj, module)
    ]
    assert not missing, f"{name}: no >>> example in {', '.join(sorted(missing))}"


@pytest.mark.parametrize("name", sorted(DATA_CONTAINERS))
def test_the_exempt_classes_are_pure_data_containers(name: str) -> None:
    """An exemption names a class of its module that is a pydantic model or a dataclass and
    defines no method: one that gains behaviour loses its exemption."""
    module = importlib.import_module(name)
    public = _public(module)
    for cls_name in sorted(DATA_CONTAINERS[name]):
        cls = public.get(cls_name)
        assert inspect.isclass(cls), f"{name}.{cls_name} is not a class of the module"
        assert issubclass(cls, BaseModel) or dataclasses.is_dataclass(cls), cls_name
        assert not _own_methods(cls, module), f"{name}.{cls_name} has methods: give it an example"
