"""Grounded query generation (GRAMMAR-Gen): SQL templates, text templates, and set-based
instantiation into a dataset of questions whose answers come from executing SQL.

The Python API mirrors the CLI::

    from ragaudit.generate import load_templates, load_text_templates, generate, GenerateOptions
"""

from ragaudit.generate.dataset import DatasetStats, TemplateStats, generate, group_id
from ragaudit.generate.options import GenerateOptions, GoldRule
from ragaudit.generate.sql.instantiate import Group, Plan, count_combinations, iter_groups, plan
from ragaudit.generate.sql.templates import (
    LoadedTemplates,
    SqlTemplate,
    TemplateFileError,
    check_template,
    import_reference_sql,
    load_templates,
    new_templates,
    save_templates,
)
from ragaudit.generate.text.templates import (
    TextTemplates,
    fill,
    import_reference_text,
    load_text_templates,
    save_text_templates,
)

__all__ = [
    "DatasetStats",
    "GenerateOptions",
    "GoldRule",
    "Group",
    "LoadedTemplates",
    "Plan",
    "SqlTemplate",
    "TemplateFileError",
    "TemplateStats",
    "TextTemplates",
    "check_template",
    "count_combinations",
    "fill",
    "generate",
    "group_id",
    "import_reference_sql",
    "import_reference_text",
    "iter_groups",
    "load_templates",
    "load_text_templates",
    "new_templates",
    "plan",
    "save_templates",
    "save_text_templates",
]
