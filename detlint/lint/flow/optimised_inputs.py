"""Optimisers that update an input, not a model: their step trains nothing.

Saliency maps, deep dream, class visualisations, style transfer and adversarial examples make an
optimiser of the tensors they listed one by one (``SGD([self.processed_image], lr=12)``) and
feed those tensors to a network (``self.model(self.processed_image)``, ``x = layer(x)`` from
``x = self.processed_image``): the step changes the image, the network's weights stay as they
were loaded. Training means a gradient that updates a model's parameters, so such a step is no
training call. An optimiser of listed tensors that are never handed to a network object (``SGD([w,
b])`` of a hand-written regression, whose tensors are the model) still trains, and so does one
made once and stepped in a loop over data (a prompt or latent learned from the batches).

An object call is a call of a name or ``self`` attribute the file neither defines nor imports
(a model or layer object: ``self.model(x)``, ``layer(x)``), never a function (``torch.matmul(x,
w)``, a project helper). One function's code is judged at a time, nested functions included,
keyed by the scope the walk gives its top-level definition (``Class.method``), module level by
None. In such a function, the gradient clearing of a network the inputs are fed to
(``self.model.zero_grad()``) serves the input's update too; another optimiser's step (a model's
own, in adversarial training) still trains. A module-level helper that makes such
an optimiser of its own parameters and returns it (``optimizer, n = setup_optimizer(img)``) is
followed: its call binds an optimiser of the tensors passed there, and the helper itself counts
as optimising an input when every call of it does.
"""
from __future__ import annotations

import builtins
from typing import Callable, Iterator, Optional

import libcst as cst

from detlint.lint.conditions import dotted

_BUILTINS = frozenset(dir(builtins))  # print(w), len(x): no network


def input_optimisers(module: cst.Module, is_optimiser: Callable[[cst.Call], bool],
                     imported: Callable[[str], bool]) -> dict[Optional[str], tuple[set[str], set[str]]]:
    """Per scope that has one, the names (``optimizer``, ``self.opt``) bound to optimisers of
    inputs, and the network objects those inputs are fed to (``self.model``: their gradient
    clearing serves the input's update)."""
    defined = {node.name.value for node in _walk(module) if isinstance(node, (cst.FunctionDef, cst.ClassDef))}
    helpers = _helpers(module, is_optimiser)
    out: dict[Optional[str], tuple[set[str], set[str]]] = {}
    calls: dict[str, list[bool]] = {}  # helper -> for each call of it, whether an input's optimiser
    known = lambda name: name in defined or name in _BUILTINS or imported(name)  # noqa: E731
    for scope, body in _scopes(module):
        found, networks, made = _judge(body, is_optimiser, known, helpers)
        for helper, name in made:
            calls.setdefault(helper, []).append(name in found)
        if found:
            mine = out.setdefault(scope, (set(), set()))
            mine[0].update(found)
            mine[1].update(networks)
    for helper, inputs in calls.items():  # every caller optimises an input: so does the helper
        if all(inputs):
            out.setdefault(helper, (set(), set()))[0].add(helpers[helper][1])
    return out


def _helpers(module: cst.Module, is_optimiser: Callable[[cst.Call], bool]) -> dict[str, tuple[list[int], str]]:
    """Module-level functions that make an optimiser of some of their own parameters, listed one
    by one, and return it (alone, or first): name -> (those parameters' positions, the local name)."""
    out: dict[str, tuple[list[int], str]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        params = [p.name.value for p in statement.params.params]
        returned = {_first_returned(node) for node in _walk(statement) if isinstance(node, cst.Return)}
        for node in _walk(statement):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call) \
                    and is_optimiser(node.value):
                target, tensors = dotted(node.targets[0].target), _listed(node.value)
                if target and tensors and tensors <= set(params) and returned == {target}:
                    out[statement.name.value] = (sorted(params.index(t) for t in tensors), target)
    return out


def _first_returned(node: cst.Return) -> Optional[str]:
    value = node.value
    if isinstance(value, cst.Tuple) and value.elements:
        value = value.elements[0].value
    return dotted(value) if value is not None else None


def _scopes(module: cst.Module) -> Iterator[tuple[Optional[str], list[cst.CSTNode]]]:
    top: list[cst.CSTNode] = []
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            yield statement.name.value, [statement]
        elif isinstance(statement, cst.ClassDef):
            for item in statement.body.body:
                if isinstance(item, cst.FunctionDef):
                    yield f"{statement.name.value}.{item.name.value}", [item]
        else:
            top.append(statement)
    yield None, top


def _judge(body: list[cst.CSTNode], is_optimiser: Callable[[cst.Call], bool], known: Callable[[str], bool],
           helpers: dict[str, tuple[list[int], str]]) -> tuple[set[str], set[str], list[tuple[str, str]]]:
    nodes = [node for root in body for node in _walk(root)]
    listed: dict[str, set[str]] = {}  # optimiser name -> the tensors it was given
    every: set[str] = set()  # every name bound to an optimiser
    made: list[tuple[str, str]] = []  # (helper, name) of optimisers a helper made here
    aliases: dict[str, str] = {}  # x = self.processed_image
    for node in nodes:
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1):
            continue
        target = dotted(node.targets[0].target)
        value = node.value
        helper = dotted(value.func) if isinstance(value, cst.Call) else None
        if helper in helpers and isinstance(value, cst.Call):  # optimizer, n = setup_optimizer(img)
            first = node.targets[0].target
            if isinstance(first, cst.Tuple) and first.elements:
                first = first.elements[0].value
            name = dotted(first)
            given = [dotted(a.value) for a in value.args if a.keyword is None and not a.star]
            positions = helpers[helper][0]
            if name and all(p < len(given) and given[p] for p in positions):
                listed[name] = {given[p] or "" for p in positions}
                every.add(name)
                made.append((helper, name))
            continue
        if not target:
            continue
        if isinstance(value, cst.Call) and is_optimiser(value):
            every.add(target)
            tensors = _listed(value)
            if tensors:
                listed[target] = tensors
        elif isinstance(value, (cst.Name, cst.Attribute)) and dotted(value):
            aliases[target] = dotted(value) or ""
    listed = {name: tensors for name, tensors in listed.items() if not _stepped_over_data(body, name)}
    if not listed:
        return set(), set(), made
    fed: dict[str, set[str]] = {}  # tensors handed to a network object -> those objects
    for node in nodes:
        if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None:
            continue
        callee = dotted(node.func) or ""
        head = callee.split(".")[0]
        plain = callee.count(".") == 0 or (head == "self" and callee.count(".") == 1)
        if not plain or known(callee.rsplit(".", 1)[-1]) or (head != "self" and known(head)):
            continue
        arg = dotted(node.args[0].value)
        if arg:
            fed.setdefault(aliases.get(arg, arg), set()).add(callee)
    found = {name for name, tensors in listed.items() if tensors <= set(fed)}
    networks = {callee for name in found for tensor in listed[name] for callee in fed[tensor]}
    return found, networks, made


def _stepped_over_data(body: list[cst.CSTNode], name: str) -> bool:
    """Is the optimiser ``name`` made outside a loop over data (``for x, y in loader:``, not
    ``range``) and stepped inside it? Then what it was given is learned from the data (a prompt,
    a latent code, a hand-written model), not one input made to fit (an image, a perturbation
    made afresh for each batch)."""
    for root in body:
        for loop in _walk(root):
            if not isinstance(loop, cst.For) or _counts(loop.iter):
                continue
            inside = list(_walk(loop.body))
            made = any(isinstance(n, cst.Assign) and any(name == dotted(t.target) or (
                isinstance(t.target, cst.Tuple) and any(name == dotted(e.value) for e in t.target.elements))
                for t in n.targets) for n in inside)
            stepped = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                          and n.func.attr.value == "step" and dotted(n.func.value) == name for n in inside)
            if stepped and not made:
                return True
    return False


def _counts(iterable: cst.BaseExpression) -> bool:
    """``range(n)``, ``enumerate(range(n))``, ``tqdm(range(n))``: a loop of iterations, not of data
    (``zip(range(n), loader)`` iterates data)."""
    while isinstance(iterable, cst.Call) and iterable.args:
        called = (dotted(iterable.func) or "").rsplit(".", 1)[-1]
        if called in ("range", "trange"):
            return True
        if called not in ("enumerate", "tqdm", "reversed", "list"):
            return False
        iterable = iterable.args[0].value
    return False


def _listed(call: cst.Call) -> Optional[set[str]]:
    """The tensors an optimiser was given one by one in a list or tuple display, if so."""
    params = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "params"), None)
    if params is None and call.args and call.args[0].keyword is None and not call.args[0].star:
        params = call.args[0].value
    if not isinstance(params, (cst.List, cst.Tuple)) or not params.elements:
        return None
    names = [dotted(e.value) if isinstance(e, cst.Element) and isinstance(e.value, (cst.Name, cst.Attribute)) else None
             for e in params.elements]
    return set(n for n in names if n) if all(names) else None


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))
