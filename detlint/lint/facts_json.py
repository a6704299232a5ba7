"""``FileFacts`` as plain JSON, checked field by field when read back.

The facts cache lives in the project tree, so anyone who can commit to a repository can write
its entries. JSON cannot run code when loaded, and every value is type-checked on the way in: a
malformed entry raises ``ValueError`` and the caller treats it as a cache miss.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from detlint.lint.ftypes import CallSite, FileFacts, Hit

FORMAT = 13


def dump_facts(facts: FileFacts, key: str) -> bytes:
    """One cache entry; ``key`` is stored too, so an entry copied to another name is rejected."""
    doc = {
        "format": FORMAT, "key": key, "path": facts.path,
        "hits": [[h.owner, h.index, h.api, h.line, h.col, h.end_line, h.end_col, h.scope, h.detail,
                  h.arg_ref, list(h.arg_span) if h.arg_span is not None else None, h.version_guarded,
                  list(h.at) if h.at is not None else None, h.displayed]
                 for h in facts.hits],
        "calls": [[c.target, c.line, c.col, c.scope, c.no_grad, c.inference, c.untaped] for c in facts.calls],
        "functions": facts.functions, "classes": facts.classes, "imports": facts.imports,
        "import_lines": facts.import_lines, "relative_imports": [list(r) for r in facts.relative_imports],
        "star_imports": facts.star_imports, "exports": facts.exports,
        "frameworks": sorted(facts.frameworks), "keras_flavours": sorted(facts.keras_flavours),
        "main_guard": facts.main_guard, "assigned": [list(a) for a in facts.assigned],
        "loops": [list(loop) for loop in facts.loops], "stopped": facts.stopped, "tables": facts.tables,
        "no_grad_decorators": facts.no_grad_decorators, "decorators": facts.decorators,
        "off_gradient": [list(p) for p in facts.off_gradient], "unreferenced": facts.unreferenced,
        "builders": facts.builders, "gradient_style": facts.gradient_style,
        "safe_defaults": [list(d) for d in facts.safe_defaults],
        "evaluation_spans": [list(span) for span in facts.evaluation_spans],
        "noqa": [[line, sorted(codes) if codes is not None else None] for line, codes in facts.noqa.items()],
        "file_noqa": facts.file_noqa, "error": facts.error, "error_line": facts.error_line,
        "error_col": facts.error_col,
    }
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def load_facts(data: bytes, key: str) -> FileFacts:
    """The facts of an entry written by ``dump_facts`` under ``key``; ValueError if it is not one."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
        raise ValueError("not a detlint cache entry for this key")
    return FileFacts(
        path=_str(doc.get("path")),
        hits=[_hit(row) for row in _list(doc.get("hits"))],
        calls=[_call(row) for row in _list(doc.get("calls"))],
        functions={_str(k): _int(v) for k, v in _dict(doc.get("functions")).items()},
        classes={_str(k): [_str(m) for m in _list(v)] for k, v in _dict(doc.get("classes")).items()},
        imports={_str(k): _str(v) for k, v in _dict(doc.get("imports")).items()},
        import_lines={_str(k): _int(v) for k, v in _dict(doc.get("import_lines")).items()},
        relative_imports=[_relative(row) for row in _list(doc.get("relative_imports"))],
        star_imports=[_str(v) for v in _list(doc.get("star_imports"))],
        exports={_str(k): _str(v) for k, v in _dict(doc.get("exports")).items()},
        frameworks={_str(v) for v in _list(doc.get("frameworks"))},
        keras_flavours={_str(v) for v in _list(doc.get("keras_flavours"))},
        main_guard=_opt_int(doc.get("main_guard")),
        assigned=[_assignment(row) for row in _list(doc.get("assigned"))],
        loops=[(_int(a), _int(b)) for a, b in (_list(row, 2) for row in _list(doc.get("loops")))],
        stopped=[_str(v) for v in _list(doc.get("stopped"))],
        no_grad_decorators=[_str(v) for v in _list(doc.get("no_grad_decorators"))],
        decorators={_str(k): [_str(v) for v in _list(names)] for k, names in _dict(doc.get("decorators")).items()},
        tables={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("tables")).items()},
        off_gradient=[(_int(a), _int(b)) for a, b in (_list(row, 2) for row in _list(doc.get("off_gradient")))],
        unreferenced=[_str(v) for v in _list(doc.get("unreferenced"))],
        builders=[_str(v) for v in _list(doc.get("builders"))],
        gradient_style=[_str(v) for v in _list(doc.get("gradient_style"))],
        safe_defaults=[(_int(a), _int(b), _str(c)) for a, b, c in (_list(row, 3) for row in _list(doc.get("safe_defaults")))],
        evaluation_spans=[tuple(_int(v) for v in _list(row, 4)) for row in _list(doc.get("evaluation_spans"))],
        noqa=dict(_noqa(row) for row in _list(doc.get("noqa"))),
        file_noqa=_bool(doc.get("file_noqa")),
        error=_opt_str(doc.get("error")),
        error_line=_int(doc.get("error_line")),
        error_col=_int(doc.get("error_col")),
    )


def _hit(row: Any) -> Hit:
    row = _list(row, 14)
    span, at = row[10], row[12]
    if span is not None:
        span = tuple(_int(v) for v in _list(span, 4))
    if at is not None:
        at = tuple(_int(v) for v in _list(at, 4))
    return Hit(owner=_str(row[0]), index=_int(row[1]), api=_str(row[2]), line=_int(row[3]), col=_int(row[4]),
               end_line=_int(row[5]), end_col=_int(row[6]), scope=_opt_str(row[7]), detail=_str(row[8]),
               arg_ref=_opt_str(row[9]), arg_span=span, version_guarded=_bool(row[11]),
               at=at, displayed=_bool(row[13]))


def _call(row: Any) -> CallSite:
    row = _list(row, 7)
    return CallSite(target=_str(row[0]), line=_int(row[1]), col=_int(row[2]), scope=_opt_str(row[3]),
                    no_grad=_bool(row[4]), inference=_bool(row[5]), untaped=_bool(row[6]))


def _assignment(row: Any) -> tuple[str, int, int, int, int]:
    row = _list(row, 5)
    return _str(row[0]), _int(row[1]), _int(row[2]), _int(row[3]), _int(row[4])


def _relative(row: Any) -> tuple[int, str, int]:
    row = _list(row, 3)
    return _int(row[0]), _str(row[1]), _int(row[2])


def _noqa(row: Any) -> tuple[int, Optional[frozenset[str]]]:
    row = _list(row, 2)
    codes = row[1]
    return _int(row[0]), (None if codes is None else frozenset(_str(c) for c in _list(codes)))


def _list(value: Any, length: Optional[int] = None) -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise ValueError("expected a list" + (f" of {length}" if length is not None else ""))
    return value


def _dict(value: Any) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("expected an integer")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _opt_str(value: Any) -> Optional[str]:
    return None if value is None else _str(value)


def _opt_int(value: Any) -> Optional[int]:
    return None if value is None else _int(value)
