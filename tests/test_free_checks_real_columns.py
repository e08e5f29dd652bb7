"""The free (no-LLM) wording checks on the column names of real, public schemas: a
faithful wording that names a column whose own name holds a positional or extreme word
("last name", "first name", "last update", "total amount") is not a qualifier, while the
same words qualifying a row still are. The tables are the public Sakila, Northwind and
TPC-H layouts (their column names; a few rows each, written here)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragaudit.db import Database, SchemaInfo, introspect
from ragaudit.generate.sql.templates import check_template
from ragaudit.generate.text.coverage import qualifier_problem

DDL = """
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT,
  email TEXT, active INTEGER, create_date TEXT, last_update TEXT);
CREATE TABLE film (film_id INTEGER PRIMARY KEY, title TEXT, release_year INTEGER,
  rental_rate REAL, length INTEGER, replacement_cost REAL, rating TEXT, last_update TEXT);
CREATE TABLE Employees (EmployeeID INTEGER PRIMARY KEY, LastName TEXT, FirstName TEXT,
  Title TEXT, TitleOfCourtesy TEXT, BirthDate TEXT, HireDate TEXT, City TEXT);
CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_orderstatus TEXT,
  o_totalprice REAL, o_orderdate TEXT, o_orderpriority TEXT, o_clerk TEXT);
"""
ROWS = """
INSERT INTO customer VALUES (1, 'Mary', 'Smith', 'mary@x.org', 1, '2006-02-14', '2006-02-15');
INSERT INTO film VALUES (1, 'Academy Dinosaur', 2006, 0.99, 86, 20.99, 'PG', '2006-02-15');
INSERT INTO Employees VALUES (1, 'Davolio', 'Nancy', 'Sales Representative', 'Ms.',
  '1948-12-08', '1992-05-01', 'Seattle');
INSERT INTO orders VALUES (1, 'O', 173665.47, '1996-01-02', '5-LOW', 'Clerk#000000951');
"""

# (template SQL, a faithful wording): each names a column whose name holds a qualifier word.
FAITHFUL = [
    (
        "SELECT email FROM customer WHERE last_name = '[customer.last_name]'",
        "What is the email of the customer whose last name is '[customer.last_name]'?",
    ),
    (
        "SELECT email FROM customer WHERE first_name = '[customer.first_name]'",
        "The email of the customer with the first name '[customer.first_name]', please.",
    ),
    (
        "SELECT last_update FROM customer WHERE email = '[customer.email]'",
        "When was the last update of the customer '[customer.email]'?",
    ),
    (
        "SELECT last_update FROM film WHERE title = '[film.title]'",
        "Last update of film '[film.title]'",
    ),
    (
        "SELECT HireDate FROM Employees WHERE LastName = '[Employees.LastName]'",
        "Hire date of the employee whose last name is '[Employees.LastName]'",
    ),
    (
        "SELECT FirstName FROM Employees WHERE LastName = '[Employees.LastName]'",
        "What first name does the employee with last name '[Employees.LastName]' have?",
    ),
    (
        "SELECT o_totalprice FROM orders WHERE o_clerk = '[orders.o_clerk]'",
        "The o totalprice of the order whose o clerk is '[orders.o_clerk]'",
    ),
]

# The same words qualifying a row, not naming a column: still a qualifier.
QUALIFIED = [
    (
        "SELECT email FROM customer WHERE last_name = '[customer.last_name]'",
        "What was the previous email of the customer whose last name is '[customer.last_name]'?",
        "previous",
    ),
    (
        "SELECT title FROM film WHERE rating = '[film.rating]'",
        "The last film rated '[film.rating]': its title?",
        "last film",
    ),
    (
        "SELECT HireDate FROM Employees WHERE LastName = '[Employees.LastName]'",
        "The first employee with last name '[Employees.LastName]': hire date",
        "first employee",
    ),
    (
        "SELECT rental_rate FROM film WHERE title = '[film.title]'",
        "The highest rental rate of film '[film.title]'",
        "highest",
    ),
]


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaInfo]:
    path: Path = tmp_path_factory.mktemp("real-columns") / "real.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript(DDL + ROWS)
    db = Database(f"sqlite:///{path}")
    yield introspect(db)
    db.dispose()


@pytest.mark.parametrize(("sql", "text"), FAITHFUL)
def test_a_column_named_with_a_qualifier_word_is_no_qualifier(
    schema: SchemaInfo, sql: str, text: str
) -> None:
    shape = check_template(sql, schema)
    assert qualifier_problem(text, shape, schema, sql) is None


@pytest.mark.parametrize(("sql", "text", "words"), QUALIFIED)
def test_the_same_words_qualifying_a_row_are_still_refused(
    schema: SchemaInfo, sql: str, text: str, words: str
) -> None:
    shape = check_template(sql, schema)
    problem = qualifier_problem(text, shape, schema, sql)
    assert problem is not None and words in problem
