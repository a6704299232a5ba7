"""Folders a module puts on ``sys.path``, so imports resolve the way the running script sees them.

``import _init_paths`` (whose module level runs ``sys.path.insert(0, osp.join(osp.dirname(__file__),
"lib"))``), ``sys.path.append("../utils")``, ``sys.path.insert(0, str(Path(__file__).parent / "src"))``:
the folder is worked out from the text, never by running it. Paths are kept relative to the
module's own folder (``lib``, ``..``); a literal relative path is read from there too, since
scripts are mostly started from their own folder. Absolute and computed paths are left out.
"""
from __future__ import annotations

import posixpath
from typing import Callable, Optional

import libcst as cst

from detlint.lint.conditions import dotted
from detlint.lint.walk import walk

FILE = "<file>"  # the module's own path, whose dirname is "."
ADDERS = {"sys.path.append": 0, "sys.path.insert": 1, "site.addsitedir": 0}
_SAME = {"os.path.abspath", "os.path.realpath", "os.path.normpath", "os.path.expanduser", "os.fspath", "str",
         "pathlib.Path", "pathlib.PurePath"}
_SAME_METHODS = {"resolve", "absolute", "expanduser"}


def mentions_sys_path(source: str) -> bool:
    return "sys.path" in source or "addsitedir" in source or "path.insert" in source or "path.append" in source


def _dirname(value: str) -> str:
    if value == FILE:
        return "."
    if value in (".", "") or value.split("/")[-1] == "..":
        return posixpath.normpath(posixpath.join(value, ".."))
    return posixpath.dirname(value) or "."


def _join(parts: list[str]) -> Optional[str]:
    if any(p == FILE for p in parts[1:]) or any(p.startswith("/") for p in parts):
        return None
    base = "." if parts[0] == FILE else parts[0]
    return posixpath.normpath(posixpath.join(base, *parts[1:]))


class SysPathFinder(cst.CSTVisitor):
    """One walk: the folders (relative to the module's folder) its calls add to ``sys.path``."""

    def __init__(self, qualify: Callable[[Optional[str]], Optional[str]]) -> None:
        super().__init__()
        self.qualify = qualify
        self.values: dict[str, str] = {}  # name -> the path it was last given (any scope)
        self.helpers: dict[str, int] = {}  # def add_path(path): sys.path.insert(0, path) -> its position
        self.params: list[list[str]] = []
        self.function: list[str] = []
        self.added: list[str] = []

    def value(self, node: cst.BaseExpression) -> Optional[str]:
        if isinstance(node, cst.Name):
            return FILE if node.value == "__file__" else self.values.get(node.value)
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value
            return text if isinstance(text, str) and text and not text.startswith(("/", "~")) and ":" not in text \
                else None
        if isinstance(node, cst.Attribute) and node.attr.value == "parent":
            inner = self.value(node.value)
            return None if inner is None else _dirname(inner)
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) \
                and node.value.attr.value == "parents" and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Index) and isinstance(node.slice[0].slice.value, cst.Integer):
            inner = self.value(node.value.value)
            for _ in range(int(node.slice[0].slice.value.value) + 1):
                inner = None if inner is None else _dirname(inner)
            return inner
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            left, right = self.value(node.left), self.value(node.right)
            return None if left is None or right is None else _join([left, right])
        if not isinstance(node, cst.Call):
            return None
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _SAME_METHODS and not node.args:
            return self.value(node.func.value)  # Path(__file__).resolve()
        name = self.qualify(dotted(node.func)) or dotted(node.func)
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if name == "os.getcwd" and not args:
            return "."
        if not args:
            return None
        if name == "os.path.dirname" and len(args) == 1:
            inner = self.value(args[0])
            return None if inner is None else _dirname(inner)
        if name == "os.path.join":
            parts = [self.value(a) for a in args]
            return None if any(p is None for p in parts) else _join([p for p in parts if p is not None])
        if name in _SAME and len(args) == 1:
            return self.value(args[0])
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.function.append(node.name.value)
        self.params.append([p.name.value for p in node.params.params])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.function.pop()
        self.params.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        found = self.value(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if found is None:
                    self.values.pop(target.target.value, None)
                else:
                    self.values[target.target.value] = found

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualify(dotted(node.func)) or dotted(node.func) or ""
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if name == "sys.path.extend" and args and isinstance(args[0], (cst.List, cst.Tuple)):
            given = [e.value for e in args[0].elements]
        elif name in ADDERS and len(args) > ADDERS[name]:
            given = [args[ADDERS[name]]]
        elif name in self.helpers and len(args) > self.helpers[name]:
            given = [args[self.helpers[name]]]  # add_path(lib_path)
        else:
            return
        for arg in given:
            if isinstance(arg, cst.Name) and self.params and arg.value in self.params[-1] \
                    and len(self.function) == 1:
                self.helpers[self.function[0]] = self.params[-1].index(arg.value)
                continue
            found = self.value(arg)
            if found is not None and found != FILE and found not in self.added:
                self.added.append(found)


def sys_path_folders(module: cst.Module, qualify: Callable[[Optional[str]], Optional[str]]) -> list[str]:
    finder = SysPathFinder(qualify)
    walk(module, finder)
    return finder.added
