"""The HTML report: one self-contained file from a run's analysis."""
