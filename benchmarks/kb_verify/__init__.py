"""Checks the knowledge base's version-dependent facts against the frameworks' own wheels."""
