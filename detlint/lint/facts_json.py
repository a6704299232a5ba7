"""``FileFacts`` as plain JSON, checked field by field when read back.

The facts cache lives in the project tree, so anyone who can commit to a repository can write
its entries. JSON cannot run code when loaded, and every value is checked on the way in: its type,
and its range (lines from 1, columns from 0, spans that end where or after they start, strings of
bounded length without control characters, which reports would print). A malformed entry raises
``ValueError`` and the caller treats it as a cache miss: the file is parsed again.
"""
from __future__ import annotations

import json
import re
from typing import Any, Optional

from detlint.lint.ftypes import CallSite, FileFacts, Hit
from detlint.lint.python2 import CONSTRUCTS as PYTHON2_CONSTRUCTS

FORMAT = 28
MAX_POSITION = 2**31 - 1  # lines and columns; SARIF readers take 32-bit integers
MAX_TEXT = 64 * 1024  # characters of one string: a path, a name, a matched value, an error
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # a tab is text; other C0, DEL and C1 are not


def dump_facts(facts: FileFacts, key: str) -> bytes:
    """One cache entry; ``key`` is stored too, so an entry copied to another name is rejected."""
    doc = {
        "format": FORMAT, "key": key, "path": facts.path,
        "hits": [_hit_row(h) for h in facts.hits], "worker_hits": [_hit_row(h) for h in facts.worker_hits],
        "calls": [[c.target, c.line, c.col, c.scope, c.no_grad, c.inference, c.untaped, c.deferred, c.on_cpu,
                   c.dropped, c.key]
                  for c in facts.calls],
        "functions": facts.functions, "classes": facts.classes, "bases": facts.bases, "imports": facts.imports,
        "import_lines": facts.import_lines, "relative_imports": [list(r) for r in facts.relative_imports],
        "star_imports": facts.star_imports, "exports": facts.exports, "path_folders": facts.path_folders,
        "frameworks": sorted(facts.frameworks), "keras_flavours": sorted(facts.keras_flavours),
        "main_guard": facts.main_guard, "assigned": [list(a) for a in facts.assigned],
        "loops": [list(loop) for loop in facts.loops], "stopped": facts.stopped, "tables": facts.tables,
        "registrars": facts.registrars, "registered": facts.registered, "abstract": facts.abstract,
        "no_grad_decorators": facts.no_grad_decorators, "decorators": facts.decorators,
        "off_gradient": [list(p) for p in facts.off_gradient], "unreferenced": facts.unreferenced,
        "lone_attributes": facts.lone_attributes, "class_bases": facts.class_bases,
        "default_spans": facts.default_spans, "flag_tests": facts.flag_tests,
        "frozen_bindings": facts.frozen_bindings, "partly_frozen": [list(p) for p in facts.partly_frozen],
        "returns": facts.returns,
        "made_types": facts.made_types,
        "kept_params": facts.kept_params, "arg_types": facts.arg_types,
        "builders": facts.builders, "gradient_style": facts.gradient_style,
        "safe_defaults": [list(d) for d in facts.safe_defaults],
        "evaluation_spans": [list(span) for span in facts.evaluation_spans],
        "off_default_spans": [list(span) for span in facts.off_default_spans],
        "scopes": [list(scope) for scope in facts.scopes],
        "options": facts.options, "options_set": facts.options_set, "params": facts.params,
        "call_args": facts.call_args, "config_files": facts.config_files,
        "option_tests": [[form, list(body), list(orelse) if orelse else None, list(after) if after else None]
                         for form, body, orelse, after in facts.option_tests],
        "stage_params": facts.stage_params, "param_handed": facts.param_handed, "handed": facts.handed,
        "noqa": [[line, sorted(codes) if codes is not None else None] for line, codes in facts.noqa.items()],
        "file_noqa": facts.file_noqa, "error": facts.error, "error_line": facts.error_line,
        "error_col": facts.error_col, "legacy": facts.legacy, "legacy_line": facts.legacy_line,
        "legacy_col": facts.legacy_col, "runtime": facts.runtime,
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
        worker_hits=[_hit(row) for row in _list(doc.get("worker_hits"))],
        calls=[_call(row) for row in _list(doc.get("calls"))],
        functions={_str(k): _line(v) for k, v in _dict(doc.get("functions")).items()},
        classes={_str(k): [_str(m) for m in _list(v)] for k, v in _dict(doc.get("classes")).items()},
        bases={_str(k): [_str(b) for b in _list(v)] for k, v in _dict(doc.get("bases")).items()},
        imports={_str(k): _str(v) for k, v in _dict(doc.get("imports")).items()},
        import_lines={_str(k): _line(v) for k, v in _dict(doc.get("import_lines")).items()},
        relative_imports=[_relative(row) for row in _list(doc.get("relative_imports"))],
        star_imports=[_str(v) for v in _list(doc.get("star_imports"))],
        path_folders=[_str(v) for v in _list(doc.get("path_folders"))],
        exports={_str(k): _str(v) for k, v in _dict(doc.get("exports")).items()},
        frameworks={_str(v) for v in _list(doc.get("frameworks"))},
        keras_flavours={_str(v) for v in _list(doc.get("keras_flavours"))},
        main_guard=None if doc.get("main_guard") is None else _line(doc.get("main_guard")),
        assigned=[_assignment(row) for row in _list(doc.get("assigned"))],
        loops=[_lines(row) for row in _list(doc.get("loops"))],
        stopped=[_str(v) for v in _list(doc.get("stopped"))],
        no_grad_decorators=[_str(v) for v in _list(doc.get("no_grad_decorators"))],
        decorators={_str(k): [_str(v) for v in _list(names)] for k, names in _dict(doc.get("decorators")).items()},
        tables={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("tables")).items()},
        registrars={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("registrars")).items()},
        registered={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("registered")).items()},
        abstract=[_str(v) for v in _list(doc.get("abstract"))],
        off_gradient=[(_line(a), _col(b)) for a, b in (_list(row, 2) for row in _list(doc.get("off_gradient")))],
        frozen_bindings=[_line(v) for v in _list(doc.get("frozen_bindings"))],
        partly_frozen=[(_line(a), _line(b)) for a, b in (_list(row, 2) for row in _list(doc.get("partly_frozen")))],
        returns={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("returns")).items()},
        made_types={_str(k): _str(v) for k, v in _dict(doc.get("made_types")).items()},
        kept_params={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("kept_params")).items()},
        arg_types={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("arg_types")).items()},
        unreferenced=[_str(v) for v in _list(doc.get("unreferenced"))],
        lone_attributes=[[_line(a), _col(b), _str(c)] for a, b, c in (_list(row, 3) for row in _list(doc.get("lone_attributes")))],
        default_spans=[[_line(a), _col(b), _line(c), _col(d), _str(e), _str(f), _int(g, -1)]
                       for a, b, c, d, e, f, g in (_list(row, 7) for row in _list(doc.get("default_spans")))],
        flag_tests=[[_line(a), _col(b), _line(c), _col(d), _str(e), _str(f)]
                    for a, b, c, d, e, f in (_list(row, 6) for row in _list(doc.get("flag_tests")))],
        class_bases={_str(k): [_str(v) for v in _list(refs)] for k, refs in _dict(doc.get("class_bases")).items()},
        builders=[_str(v) for v in _list(doc.get("builders"))],
        gradient_style=[_str(v) for v in _list(doc.get("gradient_style"))],
        safe_defaults=[(_line(a), _col(b), _str(c)) for a, b, c in (_list(row, 3) for row in _list(doc.get("safe_defaults")))],
        evaluation_spans=[_span(row) for row in _list(doc.get("evaluation_spans"))],
        off_default_spans=[_span(row) for row in _list(doc.get("off_default_spans"))],
        scopes=[_scope(row) for row in _list(doc.get("scopes", []))],
        options={_str(k): v for k, v in _dict(doc.get("options")).items() if _plain(v)},
        options_set=[_str(v) for v in _list(doc.get("options_set"))],
        params={_str(k): [_param_row(row) for row in _list(rows)] for k, rows in _dict(doc.get("params")).items()},
        call_args={_str(k): [_arg_row(row) for row in _list(rows)] for k, rows in _dict(doc.get("call_args")).items()},
        config_files=[_str(v) for v in _list(doc.get("config_files"))],
        option_tests=[[_form(form), _span(body), _span(orelse) if orelse is not None else None,
                       _span(after) if after is not None else None]
                      for form, body, orelse, after in (_list(row, 4) for row in _list(doc.get("option_tests")))],
        stage_params={_str(k): [_named_position(v) for v in _list(rows)]
                      for k, rows in _dict(doc.get("stage_params")).items()},
        param_handed=[_param_handed(row) for row in _list(doc.get("param_handed"))],
        handed=[_handed(row) for row in _list(doc.get("handed"))],
        noqa=dict(_noqa(row) for row in _list(doc.get("noqa"))),
        file_noqa=_bool(doc.get("file_noqa")),
        error=_opt_str(doc.get("error")),
        error_line=_line(doc.get("error_line")),
        error_col=_col(doc.get("error_col")),
        legacy=_legacy(doc.get("legacy")),
        legacy_line=_line(doc.get("legacy_line")),
        legacy_col=_col(doc.get("legacy_col")),
        runtime=_opt_str(doc.get("runtime")),
    )


def _hit_row(h: Hit) -> list[Any]:
    return [h.owner, h.index, h.api, h.line, h.col, h.end_line, h.end_col, h.scope, h.detail,
            h.arg_ref, list(h.arg_span) if h.arg_span is not None else None, h.version_guarded,
            list(h.at) if h.at is not None else None, h.displayed, h.off_by_default, h.worker_side, h.needs]


def _hit(row: Any) -> Hit:
    row = _list(row, 17)
    line, col, end_line, end_col = _span(row[3:7])
    return Hit(owner=_str(row[0]), index=_count(row[1]), api=_str(row[2]), line=line, col=col,
               end_line=end_line, end_col=end_col, scope=_opt_str(row[7]), detail=_str(row[8]),
               arg_ref=_opt_str(row[9]), arg_span=None if row[10] is None else _span(row[10]),
               version_guarded=_bool(row[11]), at=None if row[12] is None else _span(row[12]),
               displayed=_bool(row[13]), off_by_default=_bool(row[14]), worker_side=_bool(row[15]),
               needs=None if row[16] is None else _form(row[16]))


def _scope(row: Any) -> tuple[str, int, int, int, int]:
    row = _list(row, 5)
    return _str(row[0]), _line(row[1]), _col(row[2]), _line(row[3]), _col(row[4])


def _call(row: Any) -> CallSite:
    row = _list(row, 11)
    return CallSite(target=_str(row[0]), line=_line(row[1]), col=_col(row[2]), scope=_opt_str(row[3]),
                    no_grad=_bool(row[4]), inference=_bool(row[5]), untaped=_bool(row[6]), deferred=_bool(row[7]),
                    on_cpu=_bool(row[8]), dropped=_bool(row[9]), key=_opt_str(row[10]))


def _position(value: Any) -> int:
    """A parameter's or argument's position, -1 for none (keyword only)."""
    return -1 if value == -1 else _count(value)


def _named_position(row: Any) -> list[Any]:
    row = _list(row, 2)
    return [_str(row[0]), _position(row[1])]


def _param_handed(row: Any) -> list[Any]:
    row = _list(row, 6)
    return [_str(row[0]), _str(row[1]), _position(row[2]), _str(row[3]), _str(row[4]), _position(row[5])]


def _handed(row: Any) -> list[Any]:
    row = _list(row, 5)
    span = None if row[4] is None else list(_span(row[4]))
    return [_str(row[0]), _str(row[1]), _position(row[2]), _str(row[3]), span]


def _assignment(row: Any) -> tuple[str, int, int, int, int]:
    row = _list(row, 5)
    return (_str(row[0]), *_span(row[1:]))


def _relative(row: Any) -> tuple[int, str, int]:
    row = _list(row, 3)
    return _count(row[0]), _str(row[1]), _line(row[2])


def _noqa(row: Any) -> tuple[int, Optional[frozenset[str]]]:
    row = _list(row, 2)
    codes = row[1]
    return _line(row[0]), (None if codes is None else frozenset(_str(c) for c in _list(codes)))


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
    if len(value) > MAX_TEXT or _CONTROL.search(value):
        raise ValueError("a string too long or with control characters")
    return value


def _int(value: Any, lowest: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("expected an integer")
    if not lowest <= value <= MAX_POSITION:
        raise ValueError(f"expected an integer from {lowest} to {MAX_POSITION}, got {value}")
    return value


def _line(value: Any) -> int:
    return _int(value, 1)


def _col(value: Any) -> int:
    return _int(value, 0)


_count = _col  # an index or a count: from 0, as a column


def _lines(row: Any) -> tuple[int, int]:
    """(first line, last line), the last not before the first."""
    first, last = (_line(v) for v in _list(row, 2))
    if last < first:
        raise ValueError("a range that ends before it starts")
    return first, last


def _span(row: Any) -> tuple[int, int, int, int]:
    """(line, col, end line, end col), ending where or after it starts."""
    row = _list(row, 4)
    line, col, end_line, end_col = _line(row[0]), _col(row[1]), _line(row[2]), _col(row[3])
    if (end_line, end_col) < (line, col):
        raise ValueError("a span that ends before it starts")
    return line, col, end_line, end_col


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _opt_str(value: Any) -> Optional[str]:
    return None if value is None else _str(value)


FORM_KINDS = {"opt": 1, "param": 2, "lit": 1, "not": 1, "and": 2, "or": 2, "cmp": 3}
MAX_FORM_DEPTH = 32


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str)) and \
        (not isinstance(value, str) or len(value) <= MAX_TEXT)


def _form(row: Any, depth: int = 0) -> list[Any]:
    """A test as data (flow/default_branches.py), checked shape by shape."""
    row = _list(row)
    if depth > MAX_FORM_DEPTH or not row or not isinstance(row[0], str) or row[0] not in FORM_KINDS \
            or len(row) != FORM_KINDS[row[0]] + 1:
        raise ValueError("not a test form")
    kind = row[0]
    if kind == "opt":
        return [kind, _str(row[1])]
    if kind == "param":
        return [kind, _str(row[1]), _str(row[2])]
    if kind == "lit":
        if not _plain(row[1]):
            raise ValueError("not a plain value")
        return [kind, row[1]]
    if kind == "cmp":
        if row[1] not in ("is", "is not", "==", "!=", "<", "<=", ">", ">="):
            raise ValueError("not a comparison")
        right = _form(row[3], depth + 1)
        if right[0] != "lit":
            raise ValueError("a comparison with something other than a literal")
        return [kind, row[1], _form(row[2], depth + 1), right]
    return [kind] + [_form(part, depth + 1) for part in row[1:]]


def _param_row(row: Any) -> list[Any]:
    name, position, default = _list(row, 3)
    return [_str(name), _int(position, -1), _form(default) if default is not None else None]


def _arg_row(row: Any) -> list[Any]:
    keyword, position, form = _list(row, 3)
    return [_str(keyword), _int(position, -1), _form(form) if form is not None else None]


def _legacy(value: Any) -> Optional[str]:
    if value is not None and value not in ("async", "await") and value not in PYTHON2_CONSTRUCTS:
        raise ValueError("not a name Python 3.7 reserved")
    return value
