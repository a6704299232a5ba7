"""``detlint diverge``: record two runs and find the first op where they part."""
