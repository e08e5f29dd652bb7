"""Pipeline steps: each reads and writes the plain files of a run directory, so a user can
stop after any step, edit a file, and go on. The CLI and notebooks call these."""
