"""The hearts protocol packages, one per version."""
