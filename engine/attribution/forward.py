"""The forward function every attribution method explains: class probabilities (or logits)."""

from __future__ import annotations

from typing import Any

__all__ = ["ClassifierForward"]

OUTPUTS = ("prob", "logit")


class ClassifierForward:
    """Callable ``(input_ids, attention_mask, token_type_ids, position_ids) -> (N, K)`` scores.

    Parameters
    ----------
    model
        A sequence classifier.
    output
        ``"prob"`` (softmax probabilities, the default: scores are then in probability units
        and IG attributions add up to a probability difference) or ``"logit"``.

    Attributes
    ----------
    calls, rows
        Forward passes made and rows scored (used to show that a cached rerun costs nothing).
    """

    def __init__(self, model: Any, output: str = "prob") -> None:
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, not {output!r}")
        self.model = model
        self.output = output
        self.calls = 0
        self.rows = 0

    def __call__(
        self,
        input_ids: Any,
        attention_mask: Any = None,
        token_type_ids: Any = None,
        position_ids: Any = None,
    ) -> Any:
        import torch

        kwargs = {"attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        if position_ids is not None:
            kwargs["position_ids"] = position_ids
        self.calls += 1
        self.rows += int(input_ids.shape[0])
        logits = self.model(input_ids=input_ids, **kwargs).logits.float()
        return torch.softmax(logits, dim=-1) if self.output == "prob" else logits
