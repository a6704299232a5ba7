"""Static values of expressions and the argument conditions of knowledge-base matchers."""
from __future__ import annotations

import re
from typing import Any, Callable, Optional, Sequence

import libcst as cst

from detlint.lint.ftypes import UNKNOWN, Ref
from detlint.knowledge.kb import Condition
from detlint.lint.walk import walk

MISSING = object()


def known_text(node: cst.BaseExpression) -> str:
    """The string literals a string expression is built from (``a + " --flag"``, an f-string's
    text), space-joined: what can be said of a value computed at run time."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return " ".join(filter(None, (known_text(node.left), known_text(node.right))))
    if isinstance(node, cst.FormattedString):
        return " ".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else ""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "join" \
            and node.args and isinstance(node.args[0].value, (cst.List, cst.Tuple)):
        return " ".join(known_text(e.value) for e in node.args[0].value.elements if isinstance(e, cst.Element))
    return ""


def literal(node: cst.BaseExpression, resolve: Callable[[str], Optional[str]],
            constants: dict[str, Any]) -> Any:
    """The value of ``node`` if it is known without running the code, else ``UNKNOWN``."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value.decode("latin-1") if isinstance(value, bytes) else (UNKNOWN if value is None else value)
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    if isinstance(node, cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        if node.value in constants:
            return constants[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal(node.expression, resolve, constants)
        return -inner if isinstance(inner, (int, float)) else UNKNOWN
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        left, right = literal(node.left, resolve, constants), literal(node.right, resolve, constants)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return UNKNOWN
    if isinstance(node, cst.FormattedString):
        parts = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
            else:
                value = literal(part.expression, resolve, constants)
                if value is UNKNOWN or isinstance(value, (Ref, dict)):
                    return UNKNOWN
                parts.append(str(value))
        return "".join(parts)
    if isinstance(node, (cst.Tuple, cst.List)):  # of plain numbers and strings: (1, 1), ["a", "b"]
        items = [literal(e.value, resolve, constants) if isinstance(e, cst.Element) else UNKNOWN
                 for e in node.elements]
        plain = all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in items)
        return tuple(items) if plain else UNKNOWN
    if isinstance(node, cst.Dict):
        out: dict[Any, Any] = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return UNKNOWN
            key = literal(element.key, resolve, constants)
            if not isinstance(key, str):
                return UNKNOWN
            out[key] = literal(element.value, resolve, constants)
        return out
    if isinstance(node, cst.Call):
        name = dotted(node.func)
        args = node.args
        if name == "str" and len(args) == 1 and args[0].keyword is None:
            value = literal(args[0].value, resolve, constants)
            return UNKNOWN if value is UNKNOWN or isinstance(value, (Ref, dict)) else str(value)
        if name == "dict" and all(a.keyword is not None for a in args):
            return {a.keyword.value: literal(a.value, resolve, constants) for a in args if a.keyword}
        return UNKNOWN
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = dotted(node)
        qual = resolve(name) if name else None
        return Ref(qual or name) if name else UNKNOWN
    return UNKNOWN


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a chain of names, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def bound_names(target: cst.CSTNode) -> list[str]:
    """The names an assignment or loop target binds (``a``, ``a, b``, ``[a, (b, *c)]``)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in bound_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return bound_names(target.value)
    return []


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, Ref):
        return value.name.lower()
    return value


def _equal(value: Any, expected: Any) -> bool:
    if isinstance(value, tuple) or isinstance(expected, list):  # YAML writes a tuple as a list
        return isinstance(value, tuple) and isinstance(expected, list) and value == tuple(expected)
    if isinstance(value, Ref):
        return isinstance(expected, str) and (value.name == expected or value.name.endswith("." + expected))
    if isinstance(value, bool) or isinstance(expected, bool):
        return type(value) is type(expected) and value == expected
    if isinstance(value, str) and isinstance(expected, str):
        return _norm(value) == _norm(expected)
    return value == expected


def referenced_names(node: cst.CSTNode, resolve: Callable[[str], Optional[str]],
                     bound: Optional[Callable[[str], list[cst.BaseExpression]]] = None) -> set[str]:
    """Qualified names an expression mentions (``int(time.time())`` -> {"int", "time.time"}),
    and, with ``bound``, those of the values a local name it mentions was given before
    (``seed = int(time.time())`` ... ``PRNGKey(seed)``)."""
    found: set[str] = set()
    expanded: set[str] = set()

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, attr: cst.Attribute) -> Optional[bool]:
            name = dotted(attr)
            if name:
                found.add(resolve(name) or name)
                self.expand(name)  # args.seed = random.randint(1, 10000) ... manual_seed(args.seed)
                return False
            return True

        def expand(self, name: str) -> None:
            if bound is not None and name not in expanded:
                expanded.add(name)
                for value in bound(name):
                    walk(value, self)

        def visit_Name(self, name: cst.Name) -> None:
            found.add(resolve(name.value) or name.value)
            self.expand(name.value)

    walk(node, Finder())
    return found


def item_count(node: cst.BaseExpression, value_of: Callable[[cst.BaseExpression], Any]) -> Optional[int]:
    """How many items a list or tuple written in place holds: ``[a, b]`` 2, ``[op] * 4`` 4
    (the factor may be a known constant); None when that cannot be known statically."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return None if any(isinstance(e, cst.StarredElement) for e in node.elements) else len(node.elements)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for sequence, factor in ((node.left, node.right), (node.right, node.left)):
            count, times = item_count(sequence, value_of), value_of(factor)
            if count is not None and isinstance(times, int) and not isinstance(times, bool):
                return count * times
    return None


def check(cond: Condition, value: Any, refs: Optional[set[str]] = None, items: Optional[int] = None,
          maker: Optional[str] = None) -> bool:
    """Does an argument value (``MISSING`` when absent) satisfy ``cond``? ``items``: how many
    items the argument holds, where known (for ``min-items``); ``maker``: what made it, where
    known (``tensorflow.eye`` for a table bound to ``tf.eye(n)``, for ``not-made-by``).

    Conditions describe the case to report, so a value that cannot be known statically never
    satisfies one (detlint only reports what it can show).
    """
    spec = cond.spec
    if "min-items" in spec and (items is None or items < spec["min-items"]):
        return False
    if "uses-any" in spec:
        return bool(refs) and any(r == n or r.startswith(n + ".") for r in refs or () for n in spec["uses-any"])
    if "not-made-by" in spec and maker and any(maker == n or maker.startswith(n + ".") for n in spec["not-made-by"]):
        return False
    if "not-from" in spec and isinstance(value, Ref) and any(
            value.name == p or value.name.startswith(p + ".") for p in spec["not-from"]):
        return False
    absent = value is MISSING or value is None
    if "missing" in spec and bool(spec["missing"]) != absent:
        return False
    if "present" in spec and bool(spec["present"]) == absent:
        return False
    if spec.get("not-number") and isinstance(value, (int, float)):  # bools too: a constant, not a tensor
        return False
    if value is MISSING:
        if "default" not in spec:
            return not any(k in spec for k in ("eq", "in", "gt", "ge", "lt", "le", "contains"))
        value = spec["default"]
    if value is UNKNOWN:  # a value the program computes: the tests hold only where asked to
        return bool(spec.get("or-unknown")) or not any(k in spec for k in (
            "eq", "ne", "in", "not-in", "gt", "ge", "lt", "le", "contains", "not-contains"))
    if "eq" in spec and not _equal(value, spec["eq"]):
        return False
    if "ne" in spec and _equal(value, spec["ne"]):
        return False
    if "in" in spec and not any(_equal(value, item) for item in spec["in"]):
        return False
    if "not-in" in spec and any(_equal(value, item) for item in spec["not-in"]):
        return False
    for key, test in (("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b),
                      ("lt", lambda a, b: a < b), ("le", lambda a, b: a <= b)):
        if key in spec:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not test(value, spec[key]):
                return False
    if "contains" in spec and not (isinstance(value, str) and re.search(spec["contains"], value)):
        return False
    if "not-contains" in spec and isinstance(value, str) and re.search(spec["not-contains"], value):
        return False
    return True


def argument(call: cst.Call, name: str, pos: Optional[int]) -> Optional[cst.BaseExpression]:
    arg = argument_node(call, name, pos)
    return arg.value if arg is not None else None


def argument_node(call: cst.Call, name: str, pos: Optional[int]) -> Optional[cst.Arg]:
    """The whole argument (``workers=4``, or the positional one at ``pos``), if given."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    if pos is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) > pos:
            return positional[pos]
    return None


def matched_argument(call: cst.Call, conditions: dict[str, Condition]) -> Optional[cst.Arg]:
    """The argument a finding points at: the first one, in the conditions' order, that is given
    and whose condition is about its value (``seed`` missing is about the call as a whole, and
    a table not made by ``tf.eye`` is no reason to point at it)."""
    for name, cond in conditions.items():
        if cond.spec.get("missing") or set(cond.spec) <= {"pos", "not-made-by"}:
            continue
        arg = argument_node(call, name, cond.pos)
        if arg is not None:
            return arg
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


# (argument, condition, its value, whether the condition holds) -> a note on where the value comes
# from (a command-line default), or on which value would make a failed condition hold; a failed
# condition with a note counts as met, so the finding can say "when is_training is True"
NoteOf = Callable[[cst.BaseExpression, Condition, Any, bool], Optional[str]]


def check_kwargs(call: cst.Call, conditions: dict[str, Condition],
                 value_of: Callable[[cst.BaseExpression], Any],
                 resolve: Optional[Callable[[str], Optional[str]]] = None,
                 note_of: Optional[NoteOf] = None,
                 made_by: Optional[Callable[[cst.BaseExpression], Optional[str]]] = None,
                 bound: Optional[Callable[[str], list[cst.BaseExpression]]] = None) -> Optional[str]:
    """None if any condition fails, else a short description of the matched arguments."""
    details: list[str] = []
    for name, cond in conditions.items():
        node = argument(call, name, cond.pos)
        if node is None and has_star_args(call):
            return None  # **kwargs may carry it
        value = MISSING if node is None else value_of(node)
        refs = referenced_names(node, resolve, bound) if node is not None and resolve and "uses-any" in cond.spec \
            else None
        items = item_count(node, value_of) if node is not None and "min-items" in cond.spec else None
        maker = made_by(node) if node is not None and made_by and "not-made-by" in cond.spec else None
        holds = check(cond, value, refs, items, maker)
        note = note_of(node, cond, value, holds) if note_of is not None and node is not None else None
        if not holds and note is None:
            return None
        if node is not None:
            from detlint.lint.names import pretty

            if note is not None:
                details.append(f"{name}={dotted(node) or '...'} [{note}]")
            else:
                details.append(f"{name}={value!r}" if not isinstance(value, Ref) else f"{name}={pretty(value.name)}")
    return ", ".join(details)


def bool_condition(cond: Condition) -> Optional[bool]:
    """The value a condition such as ``{eq: true}`` asks for, when it asks for a bool alone."""
    expected = cond.spec.get("eq")
    return expected if isinstance(expected, bool) and set(cond.spec) <= {"eq", "pos", "default"} else None


def sequence_of_strings(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) for v in values)
