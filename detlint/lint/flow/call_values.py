"""What a call may run when the code names it through a value: the program model's call sites
beyond plain names (part of the collector, kept apart by concern).

``getattr(models, cfg.arch)(...)`` and ``models.__dict__[name](...)`` run one of a module's
callables; a project module handed to a project function is there to have one looked up; a
function handed on (``run_main(flags, train_fn)``) or held by a name (``creator =
get_model_creator(hparams)``) runs where it is called; a library runs methods of the objects it is
given (the knowledge base's ``runs-methods``: Lightning's fit runs ``training_step``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from detlint.lint.conditions import argument, dotted
from detlint.lint.ftypes import CallSite

if TYPE_CHECKING:
    from detlint.lint.collect import Collector as _Base
else:
    _Base = object


class CallValues(_Base):
    def note_methods_run(self, node: cst.Call, start: int) -> None:
        """``trainer.fit(model)``: the library runs methods of the objects it is given (the KB's
        runs-methods), on an object of a project class: they run here."""
        line, col = self.pos(node)[:2]
        for hit in self.facts.hits[start:]:
            for arg_name, pos, methods in self.kb.matcher(hit.owner, hit.index).runs_methods:
                given = node.func.value if not arg_name and isinstance(node.func, cst.Attribute) \
                    else argument(node, arg_name, pos) if arg_name else None
                if isinstance(given, cst.Call):  # fit(Batches(x, y)): an object made there
                    made = dotted(given.func)
                    kind = (self.qualify(made) or made) if made else None
                else:
                    name = dotted(given) if given is not None else None
                    kind = self.made_by.get(name or "") or self.local_instances.get(name or "")
                if kind and not self.external(self.qualify(kind), kind):
                    for method in methods:
                        self.facts.calls.append(CallSite(f"{kind}.{method}", line, col, self.current_scope))

    def project_module(self, node: cst.BaseExpression) -> Optional[str]:
        """The qualified name of an imported project name (``models``, ``nets.resnet``) that may be
        a module; whether it is one is told by the program, which finds its file."""
        written = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if not written or written.split(".")[0] not in self.facts.imports:
            return None
        qual = self.qualify(written)
        return qual if qual and not self.external(qual, written) and not qual.startswith("<") else None

    def project_functions(self, node: Optional[cst.BaseExpression]) -> list[str]:
        """What a function-valued expression runs when called: a function of this file defined so
        far, an imported project name, or a local name bound to those."""
        written = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if not written or written.startswith("self."):
            return []
        held = self.function_names.get((self.current_scope, written))
        if held:
            return list(held)
        if (written in self.facts.functions or written in self.facts.classes) and written not in self.holders:
            return [self.function_ref(written)]
        module = self.project_module(node)
        return [module] if module else []

    def namespace_lookup(self, func: cst.BaseExpression) -> Optional[str]:
        """``getattr(m, name)``, ``m.__dict__[name]``, ``vars(m)[name]`` with ``m`` a project name: ``m``."""
        if isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "getattr" \
                and len(func.args) >= 2:
            return self.project_module(func.args[0].value)
        if isinstance(func, cst.Subscript):
            held = func.value
            if isinstance(held, cst.Attribute) and held.attr.value == "__dict__":
                return self.project_module(held.value)
            if isinstance(held, cst.Call) and isinstance(held.func, cst.Name) and held.func.value == "vars" and held.args:
                return self.project_module(held.args[0].value)
        return None

