"""Reading what is checked: discovery, source files and notebooks."""
