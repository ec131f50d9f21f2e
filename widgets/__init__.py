"""Reusable Qt widgets and item models of Counterbias Studio.

Widgets depend on the engine (``engine``) and on Qt, never on the application layer
(``app``): they take models, callbacks and plain data, and emit signals.
"""
