"""Counterbias Studio's headless compute engine.

Nothing here imports Qt or pyqtgraph, and heavy libraries (torch, transformers, faiss,
openai) are imported lazily inside the functions that need them.
"""

__version__ = "0.1.0"
