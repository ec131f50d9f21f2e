"""CORE retrieval (Dixit et al.): an unlabeled corpus, its embedding index and counterfactual retrieval.

One concept per module, heavy libraries (torch, faiss, spaCy) imported lazily inside functions:

* :mod:`~engine.retrieval.corpus`: import a text collection as deduplicated sentences; label them with a member.
* :mod:`~engine.retrieval.encoders`: sentence encoders (the bundled MiniLM-L6 bi-encoder).
* :mod:`~engine.retrieval.dpr`: CF-DPR, a counterfactual retriever trained on human counterfactual pairs
  (the ``trained`` encoder).
* :mod:`~engine.retrieval.vectors`: the memory-mapped embedding matrix, built incrementally.
* :mod:`~engine.retrieval.index_kinds`, :mod:`~engine.retrieval.index`: FAISS indexes (flat, IVF, HNSW),
  persisted and reopened.
* :mod:`~engine.retrieval.retrieve`: top-k excerpts of another label; :mod:`~engine.retrieval.keywords`:
  their content words.
* :mod:`~engine.retrieval.registry`: the encoder and index-kind registries; :mod:`~engine.retrieval.errors`:
  named errors CB950-CB969.
"""
