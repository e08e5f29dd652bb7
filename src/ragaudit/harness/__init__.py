"""The harness behind ``ragaudit run``: asks systems under test every query, concurrently
and resumably (``ask``), under the ``harness`` section of ragaudit.yaml (``options``)."""
