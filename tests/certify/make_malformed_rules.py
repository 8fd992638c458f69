#!/usr/bin/python3
"""Writes TorchScript modules that `stiefel certify --rule` must refuse (exit 2, the file named):
wrong_signature.pt (forward takes one tensor), wrong_shape.pt (returns a frame of another shape),
not_finite.pt (returns NaN frames), wrong_dtype.pt (returns float32 for float64 frames).
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


class WrongDtype(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return w.float(), state


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in [("wrong_signature", WrongSignature()), ("wrong_shape", WrongShape()),
                    ("not_finite", NotFinite()), ("wrong_dtype", WrongDtype())]:
        torch.jit.script(m).save(os.path.join(out, name + ".pt"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
