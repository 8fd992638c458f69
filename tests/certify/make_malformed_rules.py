#!/usr/bin/python3
"""Writes TorchScript modules that `stiefel certify --rule` must refuse (exit 2, the file named):
wrong_signature.pt (forward takes one tensor), wrong_shape.pt (returns a frame of another shape),
not_finite.pt (returns NaN frames), wrong_dtype.pt (returns float32 for float64 frames),
always_double.pt (returns float64 for float32 frames), raises.pt (forward raises), reads_decay.pt (reads a setting that is not passed: a KeyError stated at
the end of a long message), long_raise.pt (raises a message whose cause is at its end),
unknown_op.pt (code that does not compile with this LibTorch, as a newer PyTorch's file), and the
rules that fail only inside a claim, where eps = 0 (the load-time probe uses eps 1e-8):
raises_at_eps0.pt, hangs_at_eps0.pt (never returns), crashes_at_eps0.pt (a SIGSEGV in ATen);
counts_calls.pt, B2 that keeps a call count in an attribute and raises where a run's first call finds
it non-zero (a probe that ran on the module itself would leak into every claim's clone); and
nan_at_eps0.pt, which loads but returns NaN frames at eps = 0 and must be refuted by the claims.
Usage: tests/certify/make_malformed_rules.py OUT_DIR"""
import os
import sys
import zipfile
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


class AlwaysDouble(torch.nn.Module):
    """Returns float64 frames whatever it is fed: refused for a rule configured float32."""

    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return w.double(), state


class ReadsDecay(torch.nn.Module):
    """A user's rule that reads a setting certify does not pass."""

    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return w * (1.0 - settings["weight_decay"]), state


class LongRaise(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        context = ""
        for i in range(400):
            context += "context "
        raise RuntimeError(context + "the cause: cannot allocate the moment buffer")


class RaisesAtEpsZero(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        if settings["eps"] == 0.0:
            raise RuntimeError("this rule cannot take eps = 0")
        return w.clone(), state


class HangsAtEpsZero(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        x = w.clone()
        while settings["eps"] == 0.0:
            x = x + 0.0
        return x, state


class CrashesAtEpsZero(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        if settings["eps"] == 0.0:
            # A view far outside the tensor's storage: reading it faults.
            x = torch.ops.aten._reshape_alias(w, [1 << 40], [1 << 40])
            return w + x.sum(), state
        return w.clone(), state


def counts_calls():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
    from make_rule_fixtures import RiemannianAdam

    class CountsCalls(torch.nn.Module):
        calls: int

        def __init__(self):
            super().__init__()
            self.b2 = RiemannianAdam(elementwise=False, euclidean_moment=False)
            self.calls = 0

        def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                    settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
            if len(state) == 0 and self.calls != 0:
                raise RuntimeError("a run's first call found calls = " + str(self.calls) +
                                   ": the attribute was stepped before this run")
            self.calls += 1
            return self.b2(w, g, state, settings)

    return CountsCalls()


def with_unknown_op(plain: str, out: str) -> None:
    """The archive `plain` with its code calling an operator this LibTorch does not have."""
    stem = os.path.splitext(os.path.basename(out))[0]
    source = zipfile.ZipFile(plain)
    with zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_STORED) as z:
        for info in source.infolist():
            data = source.read(info.filename)
            name = stem + "/" + info.filename.split("/", 1)[1]
            if name.endswith(".debug_pkl"):
                continue
            if name.endswith("code/__torch__.py"):
                assert b"torch.clone(w)" in data, data
                data = data.replace(b"torch.clone(w)", b"torch.no_such_builtin_op(w)")
            z.writestr(name, data)
    os.replace(out + ".tmp", out)


class Plain(torch.nn.Module):
    def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        return torch.clone(w), state


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in [("wrong_signature", WrongSignature()), ("wrong_shape", WrongShape()),
                    ("not_finite", NotFinite()), ("wrong_dtype", WrongDtype()), ("always_double", AlwaysDouble()), ("raises", Raises()),
                    ("nan_at_eps0", NanAtEpsZero()), ("reads_decay", ReadsDecay()), ("long_raise", LongRaise()),
                    ("raises_at_eps0", RaisesAtEpsZero()), ("hangs_at_eps0", HangsAtEpsZero()),
                    ("crashes_at_eps0", CrashesAtEpsZero()), ("counts_calls", counts_calls()),
                    ("plain", Plain())]:
        torch.jit.script(m).save(os.path.join(out, name + ".pt"))
    with_unknown_op(os.path.join(out, "plain.pt"), os.path.join(out, "unknown_op.pt"))
    with open(os.path.join(out, "nan_at_eps0.json"), "w") as f:
        f.write('{"name": "nan-at-eps0", "rule": "b2"}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
