"""Conformance catalogue: the spec interfaces of the four features as data (catalogue.yaml), and its loader."""
