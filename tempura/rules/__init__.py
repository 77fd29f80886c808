"""Rewrite rules, each a small named unit: ``logical`` (normalization and exploration), with
``physical`` and ``tvr`` rules to come."""
