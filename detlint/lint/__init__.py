"""The checker: one parse and walk per file, the program model over files, and the rules evaluated on it."""
