#!/usr/bin/python3
"""Writes the Stiefel optimizer variants a user chooses between, as TorchScript rules for
`stiefel certify --rule`, each with a --rule-config that declares what it claims (needs Debian's
python3-torch). Each is written from its publication's equations:

  retraction   polar       W+eta -> U V^T of its thin SVD (Absil & Malick 2012, Sec. 3.3)
               qr          the Q factor with sign(diag R) = +1 (Absil, Mahony & Sepulchre 2008, (4.8))
               cayley      (I - A/2)^-1 (I + A/2) W, A = P eta W^T - W eta^T P, P = I - W W^T / 2
                           (Wen & Yin 2013, Sec. 2; Li, Fuxin & Todorovic 2020, (5))
  metric       embedded    Pi_W(X) = X - W sym(W^T X) (Edelman, Arias & Smith 1998, (2.3)), g = tr X^T Y
               canonical   grad_c = G - W G^T W, g_c = tr X^T (I - W W^T / 2) Y (Edelman, Arias & Smith
                           1998, (2.22), (2.53))
               grassmann   the horizontal space, Pi^h(X) = (I - W W^T) X (Edelman, Arias & Smith 1998,
                           (2.70)); the paper's B2-Grassmann
  moment       frame       one second moment per frame, the squared norm of the tangent gradient
                           (Becigneul & Ganea 2019, Alg. 1 on a product of one manifold)
               column      one per column (the paper's B2-column)
               elementwise Adam's elementwise second moment on the tangent gradient (Kingma & Ba 2015
                           applied entrywise, as the common Riemannian Adam ports do)
  cap          tau sqrt(r) on each frame's step (the paper, Sec. 3.2), or none
  transport    after-retraction  the first moment projected onto the new tangent space once the frames
                           have moved (Becigneul & Ganea 2019: transport by projection; the paper's B2);
               at-next-step      the same projection deferred to the start of the next step (B2 in
                           exact arithmetic: the stored moment is projected at the same point);
               none        never projected (the step still is: Pi_W(m_hat) / denom)
  Each variant exposes its components (project, rgrad, retract, transport: Pi_W'(X), or X itself
  where it never transports; metric) and returns the step it retracts as forward's third result.
  decay        coupled     lambda W added to the gradient before the projection (Loshchilov & Hutter
                           2019's "L2"); decoupled: W <- W - lr lambda W before the retraction (their
                           AdamW form); or none

Usage: scripts/make_rule_variants.py OUT_DIR [NAME ...]
Writes OUT_DIR/NAME.pt and OUT_DIR/NAME.json for each variant (all without NAMEs); --list lists them.
"""
import json
import os
import sys
from typing import Dict, List, Tuple

import torch
from torch import Tensor


def sym(a: Tensor) -> Tensor:
    return (a + a.transpose(-2, -1)) / 2


def frob(x: Tensor) -> Tensor:
    return x.pow(2).sum((-2, -1)).sqrt()


class StiefelAdam(torch.nn.Module):
    """Riemannian Adam on St(d, r)^H with the components chosen at construction."""

    def __init__(self, retraction: str, metric: str, moment: str, capped: bool, transport: str, decay: str,
                 project_bug: bool = False, project_quotient: bool = True):
        super().__init__()
        self.project_quotient = project_quotient
        self.retraction = retraction
        self.metric_kind = metric
        self.moment = moment
        self.capped = capped
        self.transport_kind = transport
        self.decay = decay
        self.project_bug = project_bug

    @torch.jit.export
    def project(self, w: Tensor, x: Tensor) -> Tensor:
        """Pi_W(X) = X - W sym(W^T X); with project_bug the symmetric part is removed twice; Pi^h for
        the Grassmann metric."""
        if self.metric_kind == "grassmann":
            return x - w @ (w.transpose(-2, -1) @ x)
        if self.project_bug:
            return x - w @ (2.0 * sym(w.transpose(-2, -1) @ x))
        return x - w @ sym(w.transpose(-2, -1) @ x)

    @torch.jit.export
    def rgrad(self, w: Tensor, g: Tensor) -> Tensor:
        return self.gradient(w, g)

    @torch.jit.export
    def metric(self, w: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """One inner product per frame: tr X^T Y, or the canonical tr X^T (I - W W^T / 2) Y."""
        if self.metric_kind == "canonical":
            y = y - 0.5 * (w @ (w.transpose(-2, -1) @ y))
        return (x * y).sum((-2, -1))

    @torch.jit.export
    def transport(self, w: Tensor, w_new: Tensor, x: Tensor) -> Tensor:
        """What the rule does to its first moment when the frames move: Pi_W'(X), or nothing."""
        if self.transport_kind == "none":
            return x
        return self.project(w_new, x)

    @torch.jit.export
    def retract(self, w: Tensor, eta: Tensor) -> Tensor:
        if self.retraction == "qr":
            q, r = torch.linalg.qr(w + eta)
            d = torch.diagonal(r, dim1=-2, dim2=-1)
            s = torch.where(d < 0, -torch.ones_like(d), torch.ones_like(d))
            return q * s.unsqueeze(-2)
        if self.retraction == "cayley":
            n = w.shape[-2]
            eye = torch.eye(n, dtype=w.dtype).expand(w.shape[0], n, n)
            p = eye - 0.5 * (w @ w.transpose(-2, -1))
            a = p @ eta @ w.transpose(-2, -1) - w @ eta.transpose(-2, -1) @ p
            return torch.linalg.solve(eye - 0.5 * a, (eye + 0.5 * a) @ w)
        u, _, vh = torch.linalg.svd(w + eta, full_matrices=False)
        return u @ vh

    def gradient(self, w: Tensor, g: Tensor) -> Tensor:
        if self.metric_kind == "canonical":
            return g - w @ g.transpose(-2, -1) @ w
        return self.project(w, g)

    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor], Tensor]:
        lr = settings["lr"]
        beta1 = settings["beta1"]
        beta2 = settings["beta2"]
        eps = settings["eps"]
        lam = 0.0
        if "weight_decay" in settings:
            lam = settings["weight_decay"]
        if len(state) == 0:
            m = torch.zeros_like(w)
            if self.moment == "elementwise":
                v = torch.zeros_like(w)
            elif self.moment == "column":
                v = torch.zeros(w.shape[0], 1, w.shape[2], dtype=w.dtype)
            else:
                v = torch.zeros(w.shape[0], 1, 1, dtype=w.dtype)
            t = torch.zeros((), dtype=torch.float64)
        else:
            m, v, t = state[0], state[1], state[2]
        t = t + 1
        step = int(t.item())
        if self.decay == "coupled":
            g = g + lam * w
        xi = self.gradient(w, g)
        if self.transport_kind == "at-next-step":
            m = self.project(w, m)
        m = beta1 * m + (1.0 - beta1) * xi
        if self.moment == "elementwise":
            v = beta2 * v + (1.0 - beta2) * xi.pow(2)
        elif self.moment == "column":
            v = beta2 * v + (1.0 - beta2) * xi.pow(2).sum(-2, keepdim=True)
        else:
            v = beta2 * v + (1.0 - beta2) * xi.pow(2).sum((-2, -1), keepdim=True)
        m_hat = m / (1.0 - beta1 ** step)
        denom = (v / (1.0 - beta2 ** step)).sqrt() + eps
        q = torch.where(denom > 0, m_hat / denom.clamp_min(1e-300), torch.zeros_like(m_hat))
        eta = -lr * self.project(w, q) if self.project_quotient else -lr * q
        if self.capped and "cap_tau" in settings:
            cap = settings["cap_tau"] * float(w.shape[2]) ** 0.5
            norm = frob(eta)
            factor = torch.where(norm > cap, cap / norm.clamp_min(1e-300), torch.ones_like(norm))
            eta = eta * factor.view(-1, 1, 1)
        base = w
        retracted = eta
        if self.decay == "decoupled":
            base = w - lr * lam * w
            # polar(c W + eta) = polar(W + eta / c) for c > 0: the step retracted from W
            retracted = eta / (1.0 - lr * lam)
        nxt = self.retract(base, eta)
        if self.transport_kind == "after-retraction":
            m = self.project(nxt, m)
        return nxt, [m, v, t], retracted


ALL = ["agrees-with-reference", "on-manifold", "tangent-step", "frozen", "decay-annihilated", "scale-free",
       "equivariance", "projection", "riemannian-gradient", "retraction", "retraction-second-order", "transport",
       "metric"]
EXPECTED = [p for p in ALL if p not in ("agrees-with-reference", "retraction-second-order")]


def variant(retraction="polar", metric="embedded", moment="frame", capped=True, transport="after-retraction",
            decay="none", reference=None, properties=None, weight_decay=None, project_bug=False,
            project_quotient=True):
    """A variant and its config. Unless given, it declares every property but agreement with a
    reference, the second order of its retraction where it is polar (the only second-order one of
    the three), and a transport where it never transports."""
    settings: Dict[str, object] = {"beta1": 0.9, "beta2": 0.999, "cap_tau": 0.1 if capped else None}
    if metric == "grassmann":
        settings["map"] = "grassmann"
    if weight_decay is not None:
        settings["weight_decay"] = weight_decay
    if properties is None:
        properties = [p for p in EXPECTED if not (p == "transport" and transport == "none")]
        if retraction == "polar":
            properties = properties + ["retraction-second-order"]
    config: Dict[str, object] = {"properties": properties, "settings": settings}
    if reference:
        config["reference"] = reference
    return StiefelAdam(retraction, metric, moment, capped, transport, decay, project_bug, project_quotient), config


# The variants, by name: what a user chooses between, and the paper's B2 (with coupled decay, as a
# user writes it; the reference-agreement property declared).
VARIANTS = {
    "b2-coupled-decay": variant(decay="coupled", weight_decay=0.05, reference="b2", properties=ALL),
    "polar-frame-capped": variant(reference="b2", properties=ALL),
    "polar-frame-uncapped": variant(capped=False),
    "qr-frame-uncapped": variant(retraction="qr", capped=False),
    # The elementwise quotient amplifies the rounding of a cancelled lambda W by up to ||G|| / eps: no
    # tolerance of the case's size holds it, so this variant does not declare decay-annihilated.
    "qr-elementwise-uncapped": variant(retraction="qr", moment="elementwise", capped=False,
                                       properties=[p for p in EXPECTED if p != "decay-annihilated"]),
    "cayley-frame-capped": variant(retraction="cayley"),
    "cayley-frame-uncapped": variant(retraction="cayley", capped=False),
    "polar-column-capped": variant(moment="column"),
    "polar-elementwise-capped": variant(moment="elementwise"),
    "canonical-polar-frame-capped": variant(metric="canonical"),
    # The paper's B2-Grassmann: the horizontal space, declared against core/'s rule.
    "grassmann-polar-frame-capped": variant(metric="grassmann", reference="b2-grassmann", properties=ALL),
    # The first moment projected at the next step instead of after the retraction: B2 in exact
    # arithmetic, and so declared.
    "polar-frame-moment-at-next-step": variant(transport="at-next-step", reference="b2", properties=ALL),
    # The quotient m_hat / denom not re-projected: under one second moment per frame it is tangent
    # already (m is), so the step is B2's in exact arithmetic.
    "polar-frame-quotient-not-projected": variant(project_quotient=False, reference="b2", properties=ALL),
    # Never projected: Pi_{W_t} Pi_{W_t-1} is not Pi_{W_t}, so the moment keeps what B2's transport
    # drops. Declared against B2 to show it is not B2.
    "polar-frame-not-transported": variant(transport="none", reference="b2", properties=ALL),
    "polar-frame-decoupled-decay": variant(decay="decoupled", weight_decay=0.05),
    "project-twice-sym": variant(project_bug=True),
}


def write_atomically(path: str, save) -> None:
    tmp = path + ".tmp"
    save(tmp)
    os.replace(tmp, path)


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "--list":
        print("\n".join(VARIANTS))
        return 0
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    names = sys.argv[2:] or list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(f"make_rule_variants.py: no variant {', '.join(unknown)} (--list lists them)", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    for name in names:
        module, config = VARIANTS[name]
        config = dict(config, name=name)
        write_atomically(os.path.join(out, name + ".pt"), torch.jit.script(module).save)

        def save_config(p: str, c=config) -> None:
            with open(p, "w") as f:
                json.dump(c, f, indent=1, sort_keys=True)
                f.write("\n")

        write_atomically(os.path.join(out, name + ".json"), save_config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
