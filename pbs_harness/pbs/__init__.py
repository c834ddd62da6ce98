"""PBS client API over the harness's remote execution."""
