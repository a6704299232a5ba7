"""What a run targets: the settings, the framework versions pinned or installed, and the era of unpinned code."""
