"""The knowledge base: the rules read from YAML, framework versions, and the rule docs made from them."""
