"""pbs-harness: real-cluster acceptance harness for OpenPBS."""

__version__ = "0.1.0"
