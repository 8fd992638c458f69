"""A ``torch.optim.Optimizer`` as a rule: its ``step`` translated into a TorchScript step function.

TorchScript does not compile an optimizer's ``step`` (a Python method over ``self.param_groups`` and
``self.state``), and tracing it bakes its Python-float hyperparameters in as constants, lr among them,
which each claim of the certificate sets. ``from_optimizer`` reads the source of ``step`` and writes
the same update as a step function of the rule's signature:

- ``for group in self.param_groups: for p in group['params']: BODY`` becomes BODY on one parameter
  ``p``, a copy of the frames ``w`` (shape ``[H, d, r]``); ``p.grad`` (or ``p.grad.data``) is ``g``
  and ``p.data`` is ``p``; a skip of a parameter without a gradient is dropped; the closure and the
  loss are dropped.
- ``group['x']`` (and ``self.defaults['x']``) is ``settings['x']`` for a float hyperparameter (lr, eps,
  weight_decay, cap_tau and any other float you pass), ``(settings['beta1'], settings['beta2'])`` for
  ``betas``, and the value itself for a bool, an int, a string or None.
- ``self.state[p]`` (and every name it is bound to) is the rule's state: the tensors it holds travel in
  the state list, its Python numbers (a step count) as 0-d float64 tensors, each in the order the
  optimizer first stores them. Keys must be string constants.
- ``self.method(...)`` calls a method of the class whose body does not use ``self``, or a staticmethod.

The translation is checked where it is made: three steps of the translated function on three frames of
St(5, 2) must give the frames and state the optimizer gives itself (to 1e-12 relative), or
``from_optimizer`` raises RuleError saying where they part. Anything it cannot translate raises
RuleError naming the line of ``step``.
"""
import ast
import inspect
import itertools
import linecache
import textwrap
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor

_counter = itertools.count()

_BETAS = ("beta1", "beta2")


class _Refused(Exception):
    def __init__(self, node: Optional[ast.AST], why: str):
        super().__init__(why)
        self.line = getattr(node, "lineno", None)
        self.why = why


def _is_self_attr(node: ast.AST, attr: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def _key(node: ast.Subscript) -> Optional[str]:
    s = node.slice
    if isinstance(s, ast.Index):  # Python < 3.9
        s = s.value
    return s.value if isinstance(s, ast.Constant) and isinstance(s.value, str) else None


def _names(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _parse(expr: str) -> ast.expr:
    return ast.parse(expr, mode="eval").body


class _Translator(ast.NodeTransformer):
    """Rewrites the parameter loop's body (see the module's docstring)."""

    def __init__(self, group: str, param: str, hyper: Dict[str, object], tensor_keys: List[str],
                 number_keys: List[str], methods: Dict[str, str]):
        self.group, self.param, self.hyper = group, param, hyper
        self.tensor_keys, self.number_keys, self.methods = tensor_keys, number_keys, methods
        self.state_names = set()

    # Hyperparameters: group['x'] and self.defaults['x'].
    def _hyper(self, node: ast.Subscript) -> ast.expr:
        key = _key(node)
        if key is None:
            raise _Refused(node, "a hyperparameter read with a key that is not a string constant")
        if key not in self.hyper:
            raise _Refused(node, f"hyperparameter '{key}' is not one of the optimizer's {sorted(self.hyper)}")
        value = self.hyper[key]
        if key == "betas":
            return _parse("(settings['beta1'], settings['beta2'])")
        if isinstance(value, float) or key in ("lr", "eps"):
            return _parse(f"settings[{key!r}]")
        return ast.Constant(value=value)

    def _state(self, node: ast.Subscript) -> ast.expr:
        key = _key(node)
        if key is None:
            raise _Refused(node, "a state entry read with a key that is not a string constant")
        if key in self.number_keys:
            target = "_nstate"
        elif key in self.tensor_keys:
            target = "_state"
        else:
            raise _Refused(node, f"state entry '{key}' is never stored by the optimizer's first steps")
        return ast.Subscript(value=ast.Name(id=target, ctx=ast.Load()), slice=ast.Constant(value=key), ctx=node.ctx)

    def visit_Subscript(self, node: ast.Subscript):
        v = node.value
        if isinstance(v, ast.Name) and v.id == self.group:
            return ast.copy_location(self._hyper(node), node)
        if _is_self_attr(v, "defaults"):
            return ast.copy_location(self._hyper(node), node)
        if isinstance(v, ast.Name) and v.id in self.state_names:
            return ast.copy_location(self._state(node), node)
        if _is_self_attr(v, "state"):
            raise _Refused(node, "self.state[...] read other than by binding it to a name (state = self.state[p])")
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign):
        # state = self.state[p]: the name becomes the rule's state.
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Subscript)
                and _is_self_attr(node.value.value, "state")):
            self.state_names.add(node.targets[0].id)
            return None
        # A number stored in the state: a float, whatever its Python type.
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id in self.state_names
                and _key(node.targets[0]) in self.number_keys):
            node.value = ast.Call(func=ast.Name(id="float", ctx=ast.Load()), args=[node.value], keywords=[])
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        f = node.func
        # len(state): the entries the rule's state holds.
        if (isinstance(f, ast.Name) and f.id == "len" and len(node.args) == 1 and isinstance(node.args[0], ast.Name)
                and node.args[0].id in self.state_names):
            return ast.copy_location(_parse("(len(_state) + len(_nstate))"), node)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            if f.attr not in self.methods:
                raise _Refused(node, f"self.{f.attr}(...): only a staticmethod or a method whose body does not use "
                               "self can be called from step")
            node.func = ast.Name(id=self.methods[f.attr], ctx=ast.Load())
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        v = node.value
        # p.grad.data, p.grad: the gradient; p.data: the parameter.
        if node.attr == "data" and isinstance(v, ast.Attribute) and v.attr == "grad" and isinstance(v.value, ast.Name) \
                and v.value.id == self.param:
            return ast.copy_location(ast.Name(id="g", ctx=ast.Load()), node)
        if node.attr == "grad" and isinstance(v, ast.Name) and v.id == self.param:
            return ast.copy_location(ast.Name(id="g", ctx=ast.Load()), node)
        if node.attr == "data" and isinstance(v, ast.Name) and v.id == self.param:
            return ast.copy_location(ast.Name(id=self.param, ctx=node.ctx), node)
        if isinstance(v, ast.Name) and v.id == "self":
            raise _Refused(node, f"self.{node.attr}: step may read only self.param_groups, self.state and "
                           "self.defaults")
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name):
        if node.id in self.state_names:
            raise _Refused(node, f"the state '{node.id}' used other than by its string keys or len()")
        if node.id == self.group:
            raise _Refused(node, f"the group '{node.id}' used other than by its string keys")
        return node

    def visit_If(self, node: ast.If):
        # if p.grad is None: continue  (the frames always have a gradient)
        t = node.test
        if (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Is)
                and isinstance(t.left, ast.Attribute) and t.left.attr == "grad"
                and isinstance(t.left.value, ast.Name) and t.left.value.id == self.param):
            return None
        return self.generic_visit(node)

    def visit_Continue(self, node):
        raise _Refused(node, "continue in the parameter loop")

    def visit_Return(self, node):
        raise _Refused(node, "return inside the parameter loop")


def _loops(fn: ast.FunctionDef) -> Tuple[ast.For, List[ast.stmt], ast.For]:
    """step's `for group in self.param_groups` loop, the statements before its `for p in group['params']`
    loop, and that loop."""
    outer = [s for s in fn.body if isinstance(s, ast.For) and _is_self_attr(s.iter, "param_groups")]
    if len(outer) != 1 or not isinstance(outer[0].target, ast.Name):
        raise _Refused(fn, "step must hold one loop `for group in self.param_groups:`")
    for s in fn.body:
        if s is outer[0] or isinstance(s, (ast.Expr, ast.Return)):
            continue
        if "closure" in _names(s) or "loss" in _names(s):
            continue
        raise _Refused(s, "a statement outside `for group in self.param_groups` other than the closure's")
    group = outer[0].target.id
    inner = [s for s in outer[0].body if isinstance(s, ast.For) and isinstance(s.iter, ast.Subscript)
             and isinstance(s.iter.value, ast.Name) and s.iter.value.id == group and _key(s.iter) == "params"]
    if len(inner) != 1 or not isinstance(inner[0].target, ast.Name):
        raise _Refused(outer[0], f"the group loop must hold one loop `for p in {group}['params']:` with the update "
                       "(an optimizer that gathers its parameters into lists for a functional update cannot be "
                       "translated: write its update as a step function)")
    before = []
    for s in outer[0].body:
        if s is inner[0]:
            break
        before.append(s)
    after = outer[0].body[outer[0].body.index(inner[0]) + 1:]
    if after:
        raise _Refused(after[0], "a statement after the parameter loop")
    return outer[0], before, inner[0]


def _method_functions(cls, namespace: Dict[str, object]) -> Dict[str, str]:
    """The class's methods step may call: staticmethods, and methods whose body does not use self
    (their self dropped). Each is put in namespace under a new name; returns name -> new name."""
    out = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("__") or name in ("step", "zero_grad", "add_param_group", "state_dict", "load_state_dict"):
            continue
        raw = inspect.getattr_static(cls, name, None)
        fn = raw.__func__ if isinstance(raw, staticmethod) else member
        if not inspect.isfunction(fn) or fn.__module__ == "torch.optim.optimizer":
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            continue
        f = tree.body[0]
        if not isinstance(f, ast.FunctionDef):
            continue
        f.decorator_list = []
        if not isinstance(raw, staticmethod):
            if not f.args.args or "self" in _names(ast.Module(body=f.body, type_ignores=[])):
                continue
            f.args.args = f.args.args[1:]
        new = f"_method_{name}"
        f.name = new
        source = ast.unparse(tree) + "\n"
        filename = f"<stiefel_rule optimizer {next(_counter)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
        out[name] = new
    return out


def _hyperparameters(opt: torch.optim.Optimizer) -> Tuple[Dict[str, object], Dict[str, float]]:
    """The optimizer's hyperparameters (its first group's), and the settings the rule declares: every float
    but lr and eps, betas as beta1 and beta2."""
    hyper = {k: v for k, v in opt.param_groups[0].items() if k != "params"}
    settings: Dict[str, float] = {}
    for k, v in hyper.items():
        if k in ("lr", "eps"):
            continue
        if k == "betas":
            if not (isinstance(v, (tuple, list)) and len(v) == 2):
                raise _Refused(None, f"hyperparameter 'betas' is {v!r}, not a pair")
            settings.update({b: float(x) for b, x in zip(_BETAS, v)})
        elif k in _BETAS and "betas" in hyper:
            raise _Refused(None, f"hyperparameters 'betas' and '{k}' both given")
        elif isinstance(v, float):
            settings[k] = v
        elif isinstance(v, (tuple, list, dict)):
            raise _Refused(None, f"hyperparameter '{k}' is a {type(v).__name__}: a rule's settings are numbers")
    return hyper, settings


def _translate(cls, hyper: Dict[str, object], tensor_keys: List[str], number_keys: List[str]):
    step = inspect.unwrap(cls.step)
    try:
        source = textwrap.dedent(inspect.getsource(step))
    except (OSError, TypeError) as e:
        raise _Refused(None, f"the source of {cls.__name__}.step cannot be read ({e})") from None
    tree = ast.parse(source)
    fn = tree.body[0]
    namespace = dict(getattr(step, "__globals__", {}))
    namespace.update({"torch": torch, "Tensor": Tensor, "Dict": Dict, "List": List, "Tuple": Tuple})
    methods = _method_functions(cls, namespace)
    outer, before, inner = _loops(fn)
    translator = _Translator(outer.target.id, inner.target.id, hyper, tensor_keys, number_keys, methods)
    body = [translator.visit(s) for s in before + inner.body]
    body = [s for s in body if s is not None]
    param = inner.target.id
    head = ["_state: Dict[str, Tensor] = {}", "_nstate: Dict[str, float] = {}", "if len(state) > 0:"]
    head += [f"    _state[{k!r}] = state[{i}].clone()" for i, k in enumerate(tensor_keys)]  # the caller's kept
    head += [f"    _nstate[{k!r}] = float(state[{len(tensor_keys) + i}].item())" for i, k in enumerate(number_keys)]
    head += [f"{param} = w.clone()"]
    out = [f"_state[{k!r}]" for k in tensor_keys]
    out += [f"torch.tensor(_nstate[{k!r}], dtype=torch.float64)" for k in number_keys]
    tail = [f"return {param}, [{', '.join(out)}]" if out else f"_none: List[Tensor] = []\nreturn {param}, _none"]
    name = f"_{cls.__name__}_step"
    fdef = ast.parse(f"def {name}(w: Tensor, g: Tensor, state: List[Tensor], settings: Dict[str, float]) -> "
                     "Tuple[Tensor, List[Tensor]]:\n    pass").body[0]
    fdef.body = ast.parse("\n".join(head)).body + body + ast.parse("\n".join(tail)).body
    module = ast.Module(body=[fdef], type_ignores=[])
    ast.fix_missing_locations(module)
    text = ast.unparse(module) + "\n"
    filename = f"<stiefel_rule {cls.__name__}.step {next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name], text


def _probe(cls, kwargs, steps: int):
    """The optimizer run on itself: frames, gradients, and the state after each step."""
    gen = torch.Generator().manual_seed(20260916)
    w0 = torch.linalg.qr(torch.randn(3, 5, 2, generator=gen, dtype=torch.float64))[0]
    p = torch.nn.Parameter(w0.clone())
    opt = cls([p], **kwargs)
    grads, frames, states = [], [], []
    for _ in range(steps):
        g = torch.randn(3, 5, 2, generator=gen, dtype=torch.float64)
        p.grad = g.clone()
        opt.step()
        grads.append(g)
        frames.append(p.detach().clone())
        states.append({k: (v.detach().clone() if isinstance(v, Tensor) else v) for k, v in opt.state[p].items()})
    return opt, w0, grads, frames, states


def from_optimizer(cls, **kwargs) -> Tuple[object, Dict[str, float]]:
    """The step function (TorchScript) of optimizer class ``cls`` constructed with ``kwargs`` (its
    hyperparameters, Python floats), and the settings its rule declares. Raises RuleError (from the
    package) naming what cannot be translated, or where the translation parts from the optimizer."""
    from . import RuleError  # noqa: PLC0415 (the package imports this module)

    where = f"{cls.__name__}.step"
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
        raise RuleError(f"{cls!r} is not a torch.optim.Optimizer subclass")
    try:
        opt, w0, grads, frames, states = _probe(cls, kwargs, 3)
    except Exception as e:
        raise RuleError(f"{cls.__name__}(params, **{kwargs}) then step() on three frames of St(5, 2) raised: "
                        f"{type(e).__name__}: {e}") from None
    first = states[0]
    tensor_keys = [k for k, v in first.items() if isinstance(v, Tensor)]
    number_keys = [k for k, v in first.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    other = [k for k in first if k not in tensor_keys and k not in number_keys]
    if other or not all(isinstance(k, str) for k in first):
        raise RuleError(f"{where}: the state holds {other or list(first)}: only tensors and numbers under string keys "
                        "travel in a rule's state")
    try:
        hyper, settings = _hyperparameters(opt)
        fn, text = _translate(cls, hyper, tensor_keys, number_keys)
    except _Refused as e:
        at = f" (line {line0_of(cls) + e.line - 1})" if e.line else ""
        raise RuleError(f"{where}{at}: {e.why}") from None
    try:
        scripted = torch.jit.script(fn)
    except Exception as e:
        raise RuleError(f"{where}: its translation does not compile with TorchScript: {e}\n"
                        f"the translation:\n{text}") from None
    # The translation against the optimizer itself.
    full = {"lr": float(hyper["lr"]), "eps": float(hyper.get("eps", 1e-8))}
    full.update(settings)
    w, state = w0, []
    for t, g in enumerate(grads):
        try:
            w, state = scripted(w, g, state, full)
        except Exception as e:
            raise RuleError(f"{where}: its translation raised on step {t + 1}: {e}") from None
        scale = max(frames[t].abs().max().item(), 1e-300)
        if not torch.allclose(w, frames[t], rtol=0, atol=1e-12 * scale):
            raise RuleError(f"{where}: its translation gives other frames than the optimizer at step {t + 1} "
                            f"(largest difference {(w - frames[t]).abs().max().item():.3g}); the translation:\n{text}")
        for i, k in enumerate(tensor_keys + number_keys):
            ref = states[t][k]
            got = state[i] if k in tensor_keys else state[i].item()
            same = torch.allclose(got, ref, rtol=1e-12, atol=0) if isinstance(ref, Tensor) else got == float(ref)
            if not same:
                raise RuleError(f"{where}: its translation's state '{k}' differs from the optimizer's at step {t + 1}; "
                                f"the translation:\n{text}")
    return scripted, settings


def line0_of(cls) -> int:
    try:
        return inspect.getsourcelines(inspect.unwrap(cls.step))[1]
    except (OSError, TypeError):
        return 1
