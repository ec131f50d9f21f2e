"""Convert a sentence-transformers BERT exported to ONNX back into a HF ``BertModel`` checkpoint.

The ONNX export of ``paraphrase-MiniLM-L3-v2`` keeps the embedding and LayerNorm tensors under
their PyTorch names (prefixed ``model.0.auto_model.``) but stores every Linear weight as an
anonymous ``MatMul`` initializer of shape ``(in, out)``. Each such MatMul feeds an ``Add`` whose
other input is the Linear's *named* bias, so the weight is recovered as the transpose of the
MatMul initializer, named after that bias (``...query.bias`` -> ``...query.weight``). The result
matches onnxruntime to about 1e-6 (checked in the tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

PREFIX = "model.0.auto_model."


def onnx_to_bert_state(onnx_path: Path) -> dict[str, np.ndarray]:
    """Read the ONNX file and return a ``BertModel`` state dict as numpy arrays."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    state: dict[str, np.ndarray] = {}
    for name, value in inits.items():
        if name.startswith(PREFIX):
            state[name[len(PREFIX) :]] = value
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in inits:
            continue
        adds = [n for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
        biases = [i for n in adds for i in n.input if i.startswith(PREFIX) and i.endswith(".bias")]
        if len(biases) != 1:
            raise ValueError(f"cannot name the MatMul weight {node.input[1]!r} (biases found: {biases})")
        weight_name = biases[0][len(PREFIX) : -len(".bias")] + ".weight"
        state[weight_name] = np.ascontiguousarray(inits[node.input[1]].T)
    return state


def bert_config_for(state: dict[str, np.ndarray]) -> dict:
    """A ``BertConfig`` dict matching the shapes in ``state``."""
    vocab, hidden = state["embeddings.word_embeddings.weight"].shape
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    intermediate = state["encoder.layer.0.intermediate.dense.weight"].shape[0]
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": int(vocab),
        "hidden_size": int(hidden),
        "num_hidden_layers": layers,
        "num_attention_heads": 12,
        "intermediate_size": int(intermediate),
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": int(state["embeddings.position_embeddings.weight"].shape[0]),
        "type_vocab_size": int(state["embeddings.token_type_embeddings.weight"].shape[0]),
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }


def convert(onnx_path: Path, out_dir: Path) -> None:
    """Write ``config.json`` and ``model.safetensors`` for the ONNX model into ``out_dir``."""
    from safetensors.numpy import save_file

    state = onnx_to_bert_state(onnx_path)
    config = bert_config_for(state)
    state = {k: np.ascontiguousarray(v.astype(np.float32)) for k, v in state.items() if not k.endswith("position_ids")}
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    (out_dir / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
