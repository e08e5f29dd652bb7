"""The database layer: read-only connections, schema introspection, SQL validation and
placeholder binding."""

from typing import TYPE_CHECKING

from ragaudit.lazy import lazy_exports

if TYPE_CHECKING:
    from ragaudit.db.engine import EXAMPLE_URL, Database, QueryResult, example_database_path
    from ragaudit.db.placeholders import Placeholder, bind_template, find_placeholders
    from ragaudit.db.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo, introspect
    from ragaudit.db.validate import ValidatedSQL, validate_select

_EXPORTS = {
    "ColumnInfo": "schema",
    "Database": "engine",
    "EXAMPLE_URL": "engine",
    "ForeignKey": "schema",
    "Placeholder": "placeholders",
    "QueryResult": "engine",
    "SchemaInfo": "schema",
    "TableInfo": "schema",
    "ValidatedSQL": "validate",
    "bind_template": "placeholders",
    "example_database_path": "engine",
    "find_placeholders": "placeholders",
    "introspect": "schema",
    "validate_select": "validate",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "EXAMPLE_URL",
    "ColumnInfo",
    "Database",
    "ForeignKey",
    "Placeholder",
    "QueryResult",
    "SchemaInfo",
    "TableInfo",
    "ValidatedSQL",
    "bind_template",
    "example_database_path",
    "find_placeholders",
    "introspect",
    "validate_select",
]
