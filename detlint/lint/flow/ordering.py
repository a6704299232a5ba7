"""Does the order of a call's result matter where it is used?

A directory listing (``os.listdir``, ``glob.glob``) comes back in the order the file system
keeps, which differs between machines. That order is lost, and harmless, when the result goes
straight into a call that keeps nothing of it (``sorted``, ``len``, ``set``), is only tested for
membership (``"x" in os.listdir(d)``) or for emptiness, or is bound to a name that is sorted in
place (``files.sort()``) or rebound sorted before anything else reads it. Lists derived from it
in order (``[join(d, f) for f in files]``, ``list(...)``, ``filter(...)``) are followed the same
way. Only the function (or module) the call is in is read; anything else reading the name counts
as a use that sees the order, and so does an attribute (``self.files``) left unsorted there.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import libcst as cst

from detlint.lint.conditions import dotted
from detlint.lint.walk import walk

# does this call keep nothing of its arguments' order? (sorted, len, set, print, ...)
LosesOrder = Callable[[cst.Call], bool]
Span = tuple[int, int, int, int]
ORDER_FREE = "order-free"
Context = Union[str, tuple[str, str]]  # ORDER_FREE, or ("assigned", the name it is bound to)
# builtins whose result is ordered as their argument is
KEEPS_ORDER = frozenset({"list", "tuple", "iter", "filter", "map", "reversed"})
# list methods that change what a list holds without reading its order
NEUTRAL_METHODS = frozenset({"append", "extend", "insert", "remove", "discard", "add", "update", "count", "clear"})
COMPREHENSIONS = (cst.ListComp, cst.GeneratorExp, cst.DictComp)


class _Contexts(cst.CSTVisitor):
    """Marks, top-down, how each expression's value is used: in an order-free way, bound to a
    name, or (unmarked) anything else. Parents are visited first, so a child looks up its mark."""

    def __init__(self, loses_order: LosesOrder) -> None:
        super().__init__()
        self.loses_order = loses_order
        self.marks: dict[int, Context] = {}

    def mark(self, node: Optional[cst.CSTNode], context: Optional[Context]) -> None:
        if node is not None and context is not None:
            self.marks[id(node)] = context

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if self.loses_order(node):
            for value in positional:
                self.mark(value, ORDER_FREE)
        elif dotted(node.func) in KEEPS_ORDER:
            for value in positional:
                self.mark(value, self.marks.get(id(node)))
        return None

    def _comprehension(self, node: Union[cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp],
                       context: Optional[Context]) -> None:
        loop: Optional[cst.CompFor] = node.for_in
        while loop is not None:
            self.mark(loop.iter, context)
            loop = loop.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node, self.marks.get(id(node)))

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node, self.marks.get(id(node)))

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node, self.marks.get(id(node)))

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node, ORDER_FREE)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)):
                self.mark(target.comparator, ORDER_FREE)

    def visit_Assign(self, node: cst.Assign) -> None:
        name = dotted(node.targets[0].target) if len(node.targets) == 1 else None
        self.mark(node.value, ("assigned", name) if name else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        name = dotted(node.target)
        self.mark(node.value, ("assigned", name) if name else None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        name = dotted(node.asname.name) if node.asname is not None else None
        self.mark(node.item, ("assigned", name) if name else None)

    # truth tests: `if not files:`, `while queue:`, `assert files`
    def visit_If(self, node: cst.If) -> None:
        self.mark(node.test, ORDER_FREE)

    def visit_While(self, node: cst.While) -> None:
        self.mark(node.test, ORDER_FREE)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.mark(node.test, ORDER_FREE)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self.mark(node.expression, ORDER_FREE)


class _Find(_Contexts):
    """The mark of one node, found by walking the statement it is in."""

    def __init__(self, target: cst.CSTNode, loses_order: LosesOrder) -> None:
        super().__init__(loses_order)
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found:
            return False
        if node is self.target:
            self.found = True
            return False
        return super().on_visit(node)


class _Uses(_Contexts):
    """Follows names bound to an unordered value through the statements after the binding:
    ``ordered`` turns True at the first use that reads the order before it is fixed."""

    def __init__(self, name: str, loses_order: LosesOrder) -> None:
        super().__init__(loses_order)
        self.live = {name}  # names whose value is still in file-system order
        self.derived: set[str] = set()  # names this statement binds to a value derived from them
        self.skip: set[int] = set()  # names that are not reads (attribute names, keywords)
        self.ordered = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.ordered or not self.live:
            return False
        return super().on_visit(node)

    def read(self, node: Union[cst.Name, cst.Attribute]) -> bool:
        """A read of a live name: does it see the order?"""
        context = self.marks.get(id(node))
        if isinstance(context, tuple):
            self.derived.add(context[1])
        elif context != ORDER_FREE:
            self.ordered = True
        return False

    def visit_Name(self, node: cst.Name) -> bool:
        if id(node) not in self.skip and node.value in self.live:
            return self.read(node)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.skip.add(id(node.attr))
        if id(node) in self.skip:
            return False
        if dotted(node) in self.live:
            return self.read(node)
        return True

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        func = node.func
        if isinstance(func, cst.Attribute) and dotted(func.value) in self.live:
            owner = dotted(func.value) or ""
            if func.attr.value == "sort":
                self.live.discard(owner)  # sorted in place: from here on its order is fixed
                return False
            if func.attr.value in NEUTRAL_METHODS:
                return False
        return super().visit_Call(node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return False  # what is bound is not read (the value is visited on its own)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        for target in original_node.targets:
            self.rebind(dotted(target.target))
        self.derived.clear()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        super().visit_AnnAssign(node)
        self.skip.add(id(node.target))

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            self.rebind(dotted(original_node.target))
        self.derived.clear()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.skip.add(id(node.target))  # files += more: more entries, the same question

    def visit_For(self, node: cst.For) -> None:
        self.rebind(dotted(node.target))
        self.skip.add(id(node.target))

    def visit_AsName(self, node: cst.AsName) -> None:  # with ... as name, except ... as name
        self.rebind(dotted(node.name))
        self.skip.add(id(node.name))

    def rebind(self, name: Optional[str]) -> None:
        """``name = ...``: a value derived in order stays followed, any other replaces it."""
        if name is None:
            return
        if name in self.derived:
            self.live.add(name)
        else:
            self.live.discard(name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        # a parameter of the same name is another value
        return not any(p.name.value in self.live for p in _parameters(node.params))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return not any(p.name.value in self.live for p in _parameters(node.params))


def _parameters(params: cst.Parameters) -> list[cst.Param]:
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwarg = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwarg]


def context_of(node: cst.CSTNode, statement: cst.CSTNode, loses_order: LosesOrder) -> Optional[Context]:
    """How ``statement`` uses the value of ``node`` (an expression inside it)."""
    finder = _Find(node, loses_order)
    walk(statement, finder)
    return finder.marks.get(id(node))


def order_read_after(name: str, statements: Sequence[cst.CSTNode], loses_order: LosesOrder) -> bool:
    """Do ``statements`` read ``name`` (or lists derived from it) in its order before sorting it?"""
    uses = _Uses(name, loses_order)
    for statement in statements:
        walk(statement, uses)
        if uses.ordered or not uses.live:
            break
    # an attribute (self.files) outlives the function: other methods read it, unsorted
    return uses.ordered or any("." in live for live in uses.live)


Suite = tuple[Sequence[cst.CSTNode], bool]  # a block's statements; does it end the search (a def's body)?


def order_matters(call: cst.Call, suites: Sequence[Suite], span_of: Callable[[cst.CSTNode], Span],
                  loses_order: LosesOrder) -> bool:
    """Is the order of ``call``'s result read? ``suites``: the blocks the walk is in, innermost
    last; what follows the call's statement in them (up to the enclosing function) is searched."""
    start = span_of(call)[:2]
    statement: Optional[cst.CSTNode] = None
    following: list[cst.CSTNode] = []
    for body, boundary in reversed(suites):
        index = next((i for i, s in enumerate(body) if span_of(s)[:2] <= start <= span_of(s)[2:]), None)
        if index is None:
            break
        if statement is None:
            statement = body[index]
        following.extend(body[index + 1:])
        if boundary:
            break
    if statement is None:
        return True
    context = context_of(call, statement, loses_order)
    if context == ORDER_FREE:
        return False
    if not isinstance(context, tuple):
        return True
    if isinstance(statement, cst.With) and isinstance(statement.body, cst.IndentedBlock):
        following = [*statement.body.body, *following]  # with os.scandir(d) as it: <body>
    return order_read_after(context[1], following, loses_order)
