"""Dagster assets, one module per stage, each a thin wrapper over a domain function."""
