"""Grounded query generation (GRAMMAR-Gen): SQL templates, text templates, and set-based
instantiation into a dataset of questions whose answers come from executing SQL.

The Python API mirrors the CLI::

    from ragaudit.generate import load_templates, load_text_templates, generate, GenerateOptions
"""

from typing import TYPE_CHECKING

from ragaudit.lazy import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS = {
    "DatasetStats": "dataset",
    "GenerateOptions": "options",
    "GoldRule": "options",
    "Group": "sql.instantiate",
    "LoadedTemplates": "sql.templates",
    "Plan": "sql.instantiate",
    "SqlTemplate": "sql.templates",
    "TemplateFileError": "sql.templates",
    "TemplateStats": "dataset",
    "TextTemplates": "text.templates",
    "check_template": "sql.templates",
    "count_combinations": "sql.instantiate",
    "fill": "text.templates",
    "generate": "dataset",
    "group_id": "dataset",
    "import_reference_sql": "sql.templates",
    "import_reference_text": "text.templates",
    "iter_groups": "sql.instantiate",
    "load_templates": "sql.templates",
    "load_text_templates": "text.templates",
    "new_templates": "sql.templates",
    "plan": "sql.instantiate",
    "save_templates": "sql.templates",
    "save_text_templates": "text.templates",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
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
