"""Counterbias Studio's application layer: the main window and the job runner."""
