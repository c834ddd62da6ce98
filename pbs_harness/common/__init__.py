"""Ground floor: errors and exit codes, subprocess helpers, waits on conditions, the project's paths, safe tar."""
