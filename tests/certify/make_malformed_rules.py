#!/usr/bin/python3
"""Writes TorchScript modules that `stiefel certify --rule` must refuse (exit 2, the file named):
wrong_signature.pt (forward takes one tensor), wrong_shape.pt (returns a frame of another shape),
not_finite.pt (returns NaN frames), wrong_dtype.pt (returns float32 for float64 frames),
raises.pt (forward raises); and nan_at_eps0.pt, which loads but returns NaN frames at eps = 0 and
must be refuted by the claims.
Usage: tests/certify/make_malformed_rules.py OUT_DIR"""
import os
import sys
from typing import Dict, List, Tuple

import torch
from torch import Tensor


class WrongSignature(torch.nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class WrongShape(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return w[:, :, :1], state


class NotFinite(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return w * float("nan"), state


class Raises(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        raise RuntimeError("this rule always raises")


class NanAtEpsZero(torch.nn.Module):
    """The identity where eps > 0 (it passes the load-time probe), NaN frames where eps = 0."""

    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        if settings["eps"] == 0.0:
            return w * float("nan"), state
        return w.clone(), state


class WrongDtype(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return w.float(), state


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in [("wrong_signature", WrongSignature()), ("wrong_shape", WrongShape()),
                    ("not_finite", NotFinite()), ("wrong_dtype", WrongDtype()), ("raises", Raises()),
                    ("nan_at_eps0", NanAtEpsZero())]:
        torch.jit.script(m).save(os.path.join(out, name + ".pt"))
    with open(os.path.join(out, "nan_at_eps0.json"), "w") as f:
        f.write('{"name": "nan-at-eps0", "rule": "b2"}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
