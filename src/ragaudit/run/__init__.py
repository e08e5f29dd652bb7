"""The run harness: asks systems under test every query, concurrently and resumably."""
