"""Reliable startup, part A: interfaces, padding and pruning, tolerance, job shapes, the site hook pack."""
