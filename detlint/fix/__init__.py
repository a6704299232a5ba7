"""``--fix``: edits made from the knowledge base's fixes, placed and re-parsed before writing."""
