"""Which files are programs and which project modules they run: outlines, imports, reach."""
