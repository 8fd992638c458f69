#!/usr/bin/python3
"""Writes TorchScript frame rules for `stiefel certify --rule` (needs Debian's python3-torch).

Each rule is a torch.nn.Module whose forward takes one step on a batch of frames:

    forward(w, g, state, settings) -> (next_w, next_state)

w, g: [H, d, r]; state: [] before the first step, then what the previous step returned;
settings: "lr", "beta1", "beta2", "eps" and, where the rule is capped, "cap_tau".

Usage: scripts/make_rule_fixtures.py OUT_DIR
Writes into OUT_DIR (each with its --rule-config beside it, NAME.json):
  b2.pt                the paper's B2 (per-frame v, Stiefel projection, cap tau sqrt(r), polar
                       retraction): every update claim certifies it
  elementwise_adam.pt  Riemannian Adam with Adam's elementwise second moment (the common published
                       form, b2m): refuted on O(d)-equivariance only
  euclidean_moment.pt  B2 whose moments accumulate the Euclidean gradient G instead of Pi_W(G): a
                       plausible bug, refuted by weight-decay annihilation (lambda W reaches v)
"""
import json
import os
import sys
from typing import Dict, List, Tuple

import torch
from torch import Tensor


def sym(a: Tensor) -> Tensor:
    return (a + a.transpose(-2, -1)) / 2


def project(w: Tensor, x: Tensor) -> Tensor:
    """Pi_W(X) = X - W sym(W^T X), per frame."""
    return x - w @ sym(w.transpose(-2, -1) @ x)


def frob(x: Tensor) -> Tensor:
    return x.pow(2).sum((-2, -1)).sqrt()


def polar(m: Tensor) -> Tensor:
    u, _, vh = torch.linalg.svd(m, full_matrices=False)
    return u @ vh


class RiemannianAdam(torch.nn.Module):
    """Riemannian Adam on St(d, r)^H: m re-projected at each frame, v per frame (B2) or
    elementwise, the step re-projected, capped per frame where settings has cap_tau, polar
    retraction. With euclidean_moment the moments read G itself (the bug)."""

    def __init__(self, elementwise: bool, euclidean_moment: bool):
        super().__init__()
        self.elementwise = elementwise
        self.euclidean_moment = euclidean_moment

    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        lr = settings["lr"]
        beta1 = settings["beta1"]
        beta2 = settings["beta2"]
        eps = settings["eps"]
        if len(state) == 0:
            m = torch.zeros_like(w)
            if self.elementwise:
                v = torch.zeros_like(w)
            else:
                v = torch.zeros(w.shape[0], 1, 1, dtype=w.dtype)
            t = torch.zeros((), dtype=torch.float64)
        else:
            m, v, t = state[0], state[1], state[2]
        t = t + 1
        step = int(t.item())
        bias1 = 1.0 - beta1 ** step
        bias2 = 1.0 - beta2 ** step
        xi = project(w, g)
        fed = g if self.euclidean_moment else xi
        m = beta1 * project(w, m) + (1.0 - beta1) * fed
        if self.elementwise:
            v = beta2 * v + (1.0 - beta2) * fed.pow(2)
        else:
            v = beta2 * v + (1.0 - beta2) * fed.pow(2).sum((-2, -1), keepdim=True)
        m_hat = m / bias1
        denom = (v / bias2).sqrt() + eps
        q = torch.where(denom > 0, m_hat / denom.clamp_min(1e-300), torch.zeros_like(m_hat))
        eta = -lr * project(w, q)
        if "cap_tau" in settings:
            cap = settings["cap_tau"] * float(w.shape[2]) ** 0.5
            norm = frob(eta)
            factor = torch.where(norm > cap, cap / norm.clamp_min(1e-300), torch.ones_like(norm))
            eta = eta * factor.view(-1, 1, 1)
        nxt = polar(w + eta)
        m = project(nxt, m)
        return nxt, [m, v, t]


FIXTURES = [
    ("b2", RiemannianAdam(elementwise=False, euclidean_moment=False), "b2"),
    ("elementwise_adam", RiemannianAdam(elementwise=True, euclidean_moment=False), "b2m"),
    ("euclidean_moment", RiemannianAdam(elementwise=False, euclidean_moment=True), "b2"),
]


def write_atomically(path: str, save) -> None:
    tmp = path + ".tmp"
    save(tmp)
    os.replace(tmp, path)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, module, rule in FIXTURES:
        scripted = torch.jit.script(module)
        write_atomically(os.path.join(out, name + ".pt"), scripted.save)
        config = {"name": name.replace("_", "-"), "rule": rule, "dtype": "float64"}

        def save_config(p: str, c=config) -> None:
            with open(p, "w") as f:
                json.dump(c, f, indent=1)
                f.write("\n")

        write_atomically(os.path.join(out, name + ".json"), save_config)
        print(f"{out}/{name}.pt (implements {rule})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
