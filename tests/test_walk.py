"""walk.py calls a visitor's hooks exactly as libcst's ``node.visit`` does: the same hooks, on the
same nodes, in the same order, on every file of the fixtures and of detlint's own sources."""
from __future__ import annotations

import inspect
from pathlib import Path

import libcst as cst
import pytest

from conftest import FIXTURES
from detlint.lint.walk import TRIVIA, fields, walk

ROOT = Path(__file__).resolve().parent.parent
NODE_CLASSES = [c for c in vars(cst).values()
                if isinstance(c, type) and issubclass(c, cst.CSTNode) and not inspect.isabstract(c)]


def _modules() -> list[cst.Module]:
    out = []
    for path in sorted(FIXTURES.rglob("*.py")) + sorted((ROOT / "detlint").rglob("*.py")):
        try:
            out.append(cst.parse_module(path.read_text(encoding="utf-8")))
        except cst.ParserSyntaxError:
            continue
    return out


MODULES = _modules()


def assert_same_hooks(make: "type", modules: list[cst.Module]) -> int:
    """``walk`` and ``node.visit`` give visitors made by ``make`` the same events; how many."""
    compared = 0
    for module in modules:
        expected, got = make(), make()
        module.visit(expected)
        walk(module, got)
        assert got.events == expected.events
        compared += len(expected.events)
    return compared


def recorder(classes: list[type], stop: frozenset[str] = frozenset()) -> type:
    """A visitor with every hook of ``classes`` (visit_X, leave_X and per field), each noting its
    name and node; ``visit_X`` returns False for X in ``stop``."""
    def hook(name: str, halts: bool):  # type: ignore[no-untyped-def]
        def noted(self, node):  # type: ignore[no-untyped-def]
            self.events.append((name, id(node)))
            return False if halts else None
        return noted

    methods = {}
    for cls in classes:
        methods[f"visit_{cls.__name__}"] = hook(f"visit_{cls.__name__}", cls.__name__ in stop)
        methods[f"leave_{cls.__name__}"] = hook(f"leave_{cls.__name__}", False)
        for field, _ in fields(cls):
            methods[f"visit_{cls.__name__}_{field}"] = hook(f"visit_{cls.__name__}_{field}", False)
            methods[f"leave_{cls.__name__}_{field}"] = hook(f"leave_{cls.__name__}_{field}", False)
    methods["__init__"] = lambda self: setattr(self, "events", [])
    return type("Recorder", (cst.CSTVisitor,), methods)


@pytest.mark.parametrize("classes, stop", [
    (NODE_CLASSES, frozenset()),  # every hook: whitespace and operators are walked too
    ([c for c in NODE_CLASSES if c not in TRIVIA], frozenset()),  # none for them: they are passed over
    ([c for c in NODE_CLASSES if c not in TRIVIA], frozenset({"Call", "FunctionDef", "Lambda"})),
], ids=["all-hooks", "no-trivia-hooks", "stops-at-calls"])
def test_the_same_hooks_in_the_same_order_as_libcst(classes: list[type], stop: frozenset[str]) -> None:
    compared = assert_same_hooks(recorder(classes, stop), MODULES)
    assert len(MODULES) > 300 and compared > 100_000


def test_a_visitor_with_its_own_on_visit_is_walked_through_it() -> None:
    class Depth(cst.CSTVisitor):
        def __init__(self) -> None:
            self.events: list[tuple[str, str]] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            self.events.append(("in", type(node).__name__))
            return not isinstance(node, cst.Call)

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.events.append(("out", type(original_node).__name__))

        def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
            self.events.append(("attr", attribute))

    assert assert_same_hooks(Depth, MODULES[:60]) > 1000


def test_every_libcst_node_class_is_understood() -> None:
    """walk reads each class's fields from libcst's source; a class it cannot read stops it (a
    libcst release that visits differently fails here, not in a user's run)."""
    for cls in NODE_CLASSES:
        assert isinstance(fields(cls), tuple)
    assert fields(cst.FormattedStringExpression)[-1] == ("format_spec", False)  # hooks only when present
    assert ("names", True) in fields(cst.ImportFrom)


def test_a_node_class_whose_visit_cannot_be_read_is_walked_by_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    """libcst installed without sources, or a release whose visit walk.py does not understand:
    those nodes (and what is below them) take libcst's own visit, with the same hooks."""
    import detlint.lint.walk as walk_module

    real = walk_module.fields

    def unreadable(cls: type) -> tuple:
        if cls in (cst.Call, cst.Arg):
            raise OSError("could not get source code")
        return real(cls)

    monkeypatch.setattr(walk_module, "fields", unreadable)
    assert assert_same_hooks(recorder([c for c in NODE_CLASSES if c not in TRIVIA]), MODULES[:80]) > 1000


def test_hooks_are_found_as_libcst_finds_them_on_the_instance() -> None:
    """Static methods, class methods and hooks set on the instance are called as node.visit calls them."""
    class Odd(cst.CSTVisitor):
        seen: list

        def __init__(self) -> None:
            self.events: list[tuple[str, str]] = []
            self.visit_Attribute = lambda node: self.events.append(("attribute", type(node).__name__))

        @staticmethod
        def visit_Name(node: cst.Name) -> None:
            Odd.seen.append(node.value)

        @classmethod
        def leave_Call(cls, original_node: cst.Call) -> None:
            Odd.seen.append("call")

    for module in MODULES[:40]:
        Odd.seen = []
        expected = Odd()
        module.visit(expected)
        libcst_seen = Odd.seen
        Odd.seen = []
        got = Odd()
        walk(module, got)
        assert (got.events, Odd.seen) == (expected.events, libcst_seen)
