"""The database layer: read-only connections, schema introspection, SQL validation and
placeholder binding."""

from ragaudit.db.engine import EXAMPLE_URL, Database, QueryResult, example_database_path
from ragaudit.db.placeholders import Placeholder, bind_template, find_placeholders
from ragaudit.db.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo, introspect
from ragaudit.db.validate import ValidatedSQL, validate_select

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
