"""Adapters: one sub-package per technology, each implementing core ports."""
