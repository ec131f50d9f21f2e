"""A weighted ridge regression surrogate for captum's LIME / KernelSHAP (torch, no scikit-learn).

Solves ``min_b sum_i w_i (y_i - b0 - x_i . b)^2 + alpha |b|^2`` in closed form (the intercept
is not penalised). Captum calls :meth:`fit` with a loader of ``(x, y, w)`` and reads
:meth:`representation` (the coefficients, shape ``(1, n_features)``).
"""

from __future__ import annotations

from typing import Any

import torch
from captum._utils.models.model import Model

__all__ = ["WeightedRidge"]


class WeightedRidge(Model):
    """Closed-form weighted ridge regression.

    Parameters
    ----------
    alpha
        L2 penalty on the coefficients (not on the intercept). KernelSHAP uses a tiny value
        (plain weighted least squares); LIME a moderate one, as its sample count is often
        below the number of words.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = float(alpha)
        self.coef: torch.Tensor | None = None
        self.intercept: torch.Tensor | None = None

    def fit(self, train_data: Any, **kwargs: object) -> dict[str, float]:
        # The samples may live on a GPU (captum builds them beside the model). The solve is a
        # tiny (words + 1)^2 system: do it on the CPU in float64, hand the coefficients back on
        # the samples' device.
        xs, ys, ws = [], [], []
        device = None
        for batch in train_data:
            x, y = batch[0], batch[1]
            device = device or x.device
            w = batch[2] if len(batch) > 2 else torch.ones(len(x))
            xs.append(x.detach().cpu().double().reshape(len(x), -1))
            ys.append(y.detach().cpu().double().reshape(len(x), -1)[:, 0])
            ws.append(w.detach().cpu().double().reshape(-1))
        x, y, w = torch.cat(xs), torch.cat(ys), torch.cat(ws)
        n_features = x.shape[1]
        design = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
        weighted = design * w[:, None]
        gram = design.T @ weighted
        penalty = torch.eye(n_features + 1, dtype=x.dtype) * self.alpha
        penalty[-1, -1] = 1e-10
        solution = torch.linalg.lstsq(gram + penalty, weighted.T @ y[:, None]).solution[:, 0]
        self.coef = solution[:-1].float().to(device)
        self.intercept = solution[-1:].float().to(device)
        return {"n_samples": float(len(x))}

    def representation(self) -> torch.Tensor:
        assert self.coef is not None, "fit() first"
        return self.coef.reshape(1, -1)

    def __call__(self, x: Any) -> Any:
        assert self.coef is not None and self.intercept is not None, "fit() first"
        return x.float().reshape(len(x), -1) @ self.coef.to(x.device) + self.intercept.to(x.device)
