"""Programs: an entry file plus the project-local modules it imports, and the order things run in.

Program-level rules ask questions such as "is TensorFlow seeded before the first weight
initialiser runs?". The answer comes from a trace: the entry file's module-level statements in
order, stepping into project functions it calls (and functions it passes as arguments, as in
``app.run(main)``) and into local modules at the line that imports them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

from detlint.lint.flow.option_forms import form_params, form_truth, form_value
from detlint.lint.ftypes import CallSite, FileFacts, Hit
from detlint.lint.programs import config_files
from detlint.lint.programs.outline import Outline

FactsGetter = Callable[[Path], Optional[FileFacts]]
OutlineGetter = Callable[[Path], Optional[Outline]]
MAIN_GUARD = "__main__"  # the scope of code under `if __name__ == "__main__":`
# in FileFacts.options_set: a configuration tree is merged with a file or a list the run names
# (yacs' merge_from_file): none of its defaults is known to hold
MERGED = "<merged configuration>"
CONFIGURED = "<configured>.*"  # a call target: one of the classes the project's configuration files name
# a call target's prefix: a method of an object made by a call no one can see into, which may be
# the project class the variable's name spells (``trainer.train()`` -> ``Trainer.train``)
SPELLED = "<spelled>"
# eval(opt.model).Model(opt): the name an option's default spells, then the rest of the call
EVALUATED = "<evaluated>"
# a made-by suffix: an object of one of the classes a table holds (``Trainer = train_factory[task]``)
TABLE_ITEM = "[]"

MAX_IMPORT_DEPTH = 3
MAX_MODULES = 64
MAX_BINDINGS = 8  # distinct argument values a function is walked with; beyond, nothing is decided
MAX_OUTLINES = 1024
MAX_REEXPORTS = 8  # `from .a import f` chains followed to the function (a cycle ends here)
MAX_CANDIDATES = 64  # callables of a module one `getattr(module, name)(...)` may run
MAX_REPLAYS = 64  # calls of an already walked function whose training calls are noted again
REPLAYED = "group:training"  # what a function walked before runs again when called again
# the class of ``self`` in a method being walked, by the file that defines it: ``self._train_epoch()``
# in a base class's ``train()`` runs the subclass's ``_train_epoch`` when the object is one
Receiver = Optional[tuple[Path, str]]
# a call site or import on a branch a run with the default options never takes, (file, line):
# what the trace reaches through it runs only on request
OffDefault = Optional[tuple[Path, int]]
# what a walk of the trace runs next: (file, function or None for its module level, anchor in
# the entry, import depth, call sites it came through, the class of ``self`` there, the first
# off-default site on the way)
Step = tuple[Path, Optional[str], Optional[tuple[int, int]], int, tuple[tuple[Path, int], ...], Receiver,
             OffDefault, "Bindings"]
# what a walked function's parameters that its tests read hold, as its caller passed them (or
# their defaults): ((name, value), ...), only those known
Bindings = tuple[tuple[str, Any], ...]
# what a call may run: (file, function, the class of ``self`` there)
Target = tuple[Path, Optional[str], Receiver]


@dataclass(frozen=True)
class TraceHit:
    hit: Hit
    path: Path
    anchor_line: int  # where, in the entry file, execution reached this hit
    anchor_col: int
    ordered: bool  # False for code the trace never reached (order unknown)
    # the call sites, (file, line) from the entry inwards, through which the trace reached it: a
    # model_fn's ops run inside the estimator.train() call that runs it
    via: tuple[tuple[Path, int], ...] = ()
    # reached only through a branch the default options do not take (that branch's call site)
    optional: OffDefault = None

    @property
    def off_default(self) -> bool:
        """Does it run only in a run with other than the default options?"""
        return self.hit.off_by_default or self.optional is not None


@dataclass
class Program:
    entry: Path
    modules: list[Path] = field(default_factory=list)  # entry first, then local imports
    trace: list[TraceHit] = field(default_factory=list)  # reachable hits in execution order
    all_hits: list[TraceHit] = field(default_factory=list)  # every hit in every module
    # (file, function) -> the call sites (file, line, their function) from which the trace
    # reached it: all of them, where the trace walks a function once
    callers: dict[tuple[Path, Optional[str]], set[tuple[Path, int, Optional[str]]]] = field(default_factory=dict)
    # call sites that run one of several project callables chosen at run time (getattr(models,
    # name)(...)), by (file, line): what a message says of code reached through them
    choices: dict[tuple[Path, int], str] = field(default_factory=dict)
    # the candidates of a lookup by name a run with the default options does not take (the
    # --model default names another one), by where the lookup is
    off_choices: dict[tuple[Path, int], set[tuple[Path, Optional[str]]]] = field(default_factory=dict)
    # the entry's blocks of scope groups (FileFacts.scopes): where a scoped provider reaches
    scopes: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    # (file, class, attribute) -> the project class of the object its constructor was given and
    # keeps there (Trainer(netD=netD) with self.netD = netD): what self.netD.train_step() runs
    kept: dict[tuple[Path, str, str], tuple[Path, str]] = field(default_factory=dict)


class ModuleResolver:
    """Maps imported module names to files of the project (never to installed packages)."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [r.resolve() for r in roots]
        self._cache: dict[tuple[Path, str], Optional[tuple[Path, str]]] = {}
        # folders the project's modules put on sys.path (``import _init_paths``), asked for only
        # when a name is found nowhere else (set by the engine; flow/sys_path.py)
        self.path_folders: Callable[[], list[str]] = lambda: []
        # a program in a large package resolves hundreds of names: folder listings and real
        # paths are looked up once each instead of a stat per candidate file
        self._listings: dict[str, frozenset[str]] = {}
        self._real_dirs: dict[str, str] = {}

    def _listing(self, directory: str) -> frozenset[str]:
        if directory not in self._listings:
            try:
                self._listings[directory] = frozenset(os.listdir(directory))
            except OSError:
                self._listings[directory] = frozenset()
        return self._listings[directory]

    def _real(self, path: str) -> Path:
        """os.path.realpath, with the folder's real path remembered."""
        directory, name = os.path.split(path)
        if directory not in self._real_dirs:
            self._real_dirs[directory] = os.path.realpath(directory)
        joined = os.path.join(self._real_dirs[directory], name)
        return Path(os.path.realpath(joined) if os.path.islink(joined) else joined)

    def _ancestors(self, folder: Path) -> list[str]:
        out = []
        for parent in folder.parents:
            if parent in self.roots or not any(root in parent.parents or root == parent for root in self.roots):
                break
            out.append(str(parent))
        return out

    def _file_for(self, base: str, parts: list[str]) -> Optional[str]:
        if parts:
            parent = os.path.join(base, *parts[:-1])
            listing = self._listing(parent)
            module = parts[-1] + ".py"
            if module in listing and os.path.isfile(os.path.join(parent, module)):
                return os.path.join(parent, module)
            if parts[-1] not in listing:
                return None
        package = os.path.join(base, *parts)
        if "__init__.py" in self._listing(package) and os.path.isfile(os.path.join(package, "__init__.py")):
            return os.path.join(package, "__init__.py")
        return None

    def resolve(self, from_file: Path, dotted_name: str) -> Optional[tuple[Path, str]]:
        """The file a dotted name lives in and what is left of the name (``seed_all``)."""
        key = (from_file, dotted_name)
        if key not in self._cache:
            self._cache[key] = self._resolve(from_file, dotted_name)
        return self._cache[key]

    def _resolve(self, from_file: Path, dotted_name: str) -> Optional[tuple[Path, str]]:
        level = len(dotted_name) - len(dotted_name.lstrip("."))
        parts = [p for p in dotted_name.lstrip(".").split(".") if p]
        here = self._real(str(from_file))
        if level:
            bases = [os.path.realpath(os.path.join(here.parent, *[".."] * (level - 1)))]
        else:
            # the importing file's folder, the source roots, then the folders between them: a
            # script's folder is on sys.path, so `import core.common` in core/yolo.py finds
            # core/common.py when the script beside core/ runs
            bases = [str(here.parent), *map(str, self.roots), *self._ancestors(here.parent)]
            # a project that is itself a package imports itself by name (`from albert import
            # modeling` in albert/run.py; `import vdm.utils` in vdm/main.py, a namespace package
            # without __init__.py, run as `python -m vdm.main`): its folder's parent is where
            # that name is found
            bases += [str(root.parent) for root in self.roots
                      if parts and parts[0] == root.name and (len(parts) > 1 or "__init__.py" in self._listing(str(root)))]
        found = self._in_bases(bases, parts, here, level)
        if found is None and not level and parts:
            # sys.path.insert(0, osp.join(osp.dirname(__file__), "lib")) in a module the
            # program imports first (import _init_paths)
            found = self._in_bases([f for f in self.path_folders() if f not in bases], parts, here, level)
        return found

    def _in_bases(self, bases: list[str], parts: list[str], here: Path, level: int) -> Optional[tuple[Path, str]]:
        for base in bases:
            for cut in range(len(parts), 0, -1):
                found = self._file_for(base, parts[:cut])
                if found is not None:
                    real_found = self._real(found)
                    if real_found != here:
                        return real_found, ".".join(parts[cut:])
            if level and not parts:
                init = self._file_for(base, [])
                if init is not None:
                    return self._real(init), ""
        return None


class ProgramBuilder:
    def __init__(self, facts_of: FactsGetter, resolver: ModuleResolver,
                 outline_of: Optional[OutlineGetter] = None) -> None:
        self.facts_of = facts_of
        self.resolver = resolver
        self.outline_of = outline_of  # None: every imported module is parsed
        self.provider_tokens: frozenset[str] = frozenset()  # see outline.provider_tokens
        # the hits of what the program's launchers set (settings/launchers.py), by entry
        self.launch_hits: Optional[Callable[[Path], list[Hit]]] = None
        # the dotted names the project's configuration files give to instantiate (config_targets.py)
        self.config_targets: Callable[[], list[str]] = lambda: []
        # the project files that may define a class of this name (by their text)
        self.files_naming: Callable[[str], list[Path]] = lambda name: []
        # is (line, col) of the file inside `if self.flag:` that no construction turns on (unused.py)?
        self.flag_off: Callable[[Path, FileFacts, int, int], bool] = lambda path, facts, line, col: False
        self._config_leaves: dict[tuple[Path, int, int], dict[str, Any]] = {}  # read once per run
        self._spelled: dict[tuple[str, Path], Optional[tuple[tuple[Path, str], tuple[Path, str]]]] = {}
        self._registered: dict[tuple[str, Path], list[tuple[Path, str]]] = {}

    def forget(self) -> None:
        """Drop what was worked out from files' text (a file was given new text)."""
        self._spelled.clear()
        self._registered.clear()

    def local_imports(self, path: Path, facts: FileFacts) -> list[tuple[int, Path]]:
        """(line, file) of every project module ``path`` imports."""
        out: dict[Path, int] = {}
        for module, line in facts.import_lines.items():
            found = self.resolver.resolve(path, module)
            if found:
                out.setdefault(found[0], line)
        for level, module, line in facts.relative_imports:
            found = self.resolver.resolve(path, "." * level + module)
            if found:
                out.setdefault(found[0], line)
        for alias, qual in facts.imports.items():
            if qual.startswith("."):
                found = self.resolver.resolve(path, qual)
                if found:
                    out.setdefault(found[0], facts.import_lines.get(qual, 0) or _line_of_relative(facts, qual))
        return sorted(((line, p) for p, line in out.items()), key=lambda t: t[0])

    def _outline_imports(self, path: Path, sketch: Outline) -> list[Path]:
        found: dict[Path, int] = {}
        for name, line in sketch.imports:
            resolved = self.resolver.resolve(path, name)
            if resolved:
                found.setdefault(resolved[0], line)
        return sorted(found, key=lambda p: found[p])

    def imported_methods(self, path: Path, facts: FileFacts, call: str,
                         facts_of: FactsGetter) -> list[Target]:
        """``gan.train()`` on an object of a class this file imports from a project module
        (``from GAN import GAN``; which one is not known, as in ``cls()`` over a list of them)."""
        receiver, _, method = call.rpartition(".")
        if not receiver or receiver.split(".")[0] in facts.imports:
            return []
        out = []
        for qual in facts.imports.values():
            if not qual.rsplit(".", 1)[-1][:1].isupper():
                continue  # classes are Capitalised; other names would only cost parses
            cls = self.class_named(path, facts, qual, facts_of)
            found = self.method_of(cls, method, facts_of) if cls is not None else None
            if found is not None:
                out.append((found[0], found[1], cls))
        return out

    def spelled_class(self, call: str, caller: Path,
                      facts_of: FactsGetter) -> Optional[tuple[tuple[Path, str], tuple[Path, str]]]:
        """``trainer.train()`` on an object whose origin is not known (``trainer =
        exp.get_trainer(args)``): the one project class the variable's name spells (``Trainer``,
        ``data_module`` -> ``DataModule``) that has the method, and where the method is."""
        key = (call, caller.parent)
        if key not in self._spelled:  # asked once per call site and program: answered once per folder
            self._spelled[key] = self._spelled_class(call, caller, facts_of)
        return self._spelled[key]

    def _spelled_class(self, call: str, caller: Path,
                       facts_of: FactsGetter) -> Optional[tuple[tuple[Path, str], tuple[Path, str]]]:
        receiver, _, method = call.rpartition(".")
        if not receiver.isidentifier() or receiver in ("self", "cls") or receiver.startswith("_"):
            return None
        cls_name = "".join(part[:1].upper() + part[1:] for part in receiver.split("_") if part)
        if not cls_name or cls_name == receiver:
            return None
        found = []
        for other_path in self.files_naming(cls_name)[:MAX_CANDIDATES]:
            other = facts_of(other_path)
            if other is None or other.error or cls_name not in other.classes:
                continue
            where = self.method_of((other_path, cls_name), method, facts_of)
            if where is not None:
                found.append(((other_path, cls_name), where))
        if len(found) > 1:  # in a repository of several projects: the one nearest the caller
            def shared(candidate: tuple[tuple[Path, str], tuple[Path, str]]) -> int:
                return len(os.path.commonpath([str(candidate[0][0]), str(caller)]))
            nearest = max(map(shared, found))
            found = [f for f in found if shared(f) == nearest]
        return found[0] if len(found) == 1 else None

    def registered(self, path: Path, facts: FileFacts, table: str, facts_of: FactsGetter) -> list[tuple[Path, str]]:
        """What the project's decorators put in a registry ``table`` of ``path`` (``_MODELS``,
        which ``register_model`` fills): the (file, name) of every class and function decorated
        with one of the table's registering functions, nearest first, at most MAX_CANDIDATES."""
        key = (f"{table}@registry", path)
        if key not in self._registered:
            found: list[tuple[Path, str]] = []
            for writer in facts.registrars.get(table, ()):
                for other_path in self.files_naming(writer):
                    other = facts_of(other_path)
                    for decorator, names in (other.registered.items() if other is not None and not other.error
                                             else ()):
                        if decorator.rsplit(".", 1)[-1] != writer:
                            continue
                        where = (other_path, decorator) if decorator in other.functions else \
                            self.resolver.resolve(other_path, decorator)
                        if where and where[0] == path and where[1] == writer:
                            found.extend((other_path, n) for n in names if (other_path, n) not in found)
            found.sort(key=lambda c: -len(os.path.commonpath([str(c[0]), str(path)])))
            self._registered[key] = found[:MAX_CANDIDATES]
        return self._registered[key]

    def registry_object(self, path: Path, facts: FileFacts, dotted_name: str) -> Optional[tuple[Path, str]]:
        """``TaskRegistry.lookup`` where ``TaskRegistry = registry.Registry()`` at a module's top
        level (this one, or the one the name resolves to): the file and name of that object."""
        head, _, method = dotted_name.partition(".")
        if method and "." not in method and head not in facts.classes and head not in facts.functions \
                and any(a[0] == head for a in facts.assigned):
            return path, head
        found = self.resolver.resolve(path, dotted_name)
        if found is None or found[1].count(".") != 1:
            return None
        other = self.facts_of(found[0])
        name = found[1].split(".")[0]
        if other is None or name in other.classes or name in other.functions \
                or not any(a[0] == name for a in other.assigned):
            return None
        return found[0], name

    def registered_through(self, where: tuple[Path, str]) -> list[tuple[Path, str]]:
        """The classes and functions decorated through a registry object's method
        (``@task_lib.TaskRegistry.register("detection")``), anywhere in the project, nearest first,
        at most MAX_CANDIDATES: what its lookups may return."""
        key = (f"{where[1]}@object", where[0])
        if key not in self._registered:
            found: list[tuple[Path, str]] = []
            for other_path in self.files_naming(where[1]):
                other = self.facts_of(other_path)
                for decorator, names in (other.registered.items() if other is not None and not other.error else ()):
                    if where[1] not in decorator.split("."):
                        continue
                    head = decorator.split(".")[0]
                    resolved = (other_path, decorator) if any(a[0] == head for a in other.assigned) \
                        else self.resolver.resolve(other_path, decorator)
                    if resolved and resolved[0] == where[0] and resolved[1].split(".")[0] == where[1]:
                        found.extend((other_path, n) for n in names if (other_path, n) not in found)
            found.sort(key=lambda c: -len(os.path.commonpath([str(c[0]), str(where[0])])))
            self._registered[key] = found[:MAX_CANDIDATES]
        return self._registered[key]

    def overrides(self, found: list[Target], program: Program, path: Path, line: int,
                  touch: FactsGetter) -> list[Target]:
        """``loss.accumulate_gradients(...)`` that resolved to a method with no body of its own
        (``raise NotImplementedError``): what runs is a project subclass's override. The
        subclasses are found by the base's name and read; the overrides join the program."""
        out: list[Target] = []
        for cls_path, scope, _ in found:
            facts = self.facts_of(cls_path)
            if facts is None or scope is None or scope not in facts.abstract:
                continue
            cls, _, method = scope.partition(".")
            subclasses = self.subclasses((cls_path, cls), self.facts_of)
            for sub_path, sub in subclasses:
                where = self.method_of((sub_path, sub), method, self.facts_of)
                defined = self.facts_of(where[0]) if where is not None else None
                if where is not None and defined is not None and where[1] not in defined.abstract \
                        and touch(where[0]) is not None:
                    out.append((where[0], where[1], (sub_path, sub)))
            if len(out) > 1:
                program.choices[(path, line)] = f"one of {len(out)} subclasses of {cls} that define {method}"
        return out[:MAX_CANDIDATES]

    def _note_kept(self, program: Program, path: Path, facts: FileFacts, site: CallSite, found: list[Target],
                   touch: FactsGetter) -> None:
        """A constructor call given objects of project classes (``Trainer(netD=netD)``): what its
        __init__ keeps of them (``self.netD = netD``), for the methods the object calls on them."""
        given = facts.arg_types.get(f"{site.line}:{site.col}")
        if not given:
            return
        for other_path, other_scope, other_self in found:
            if other_self is None or not (other_scope or "").endswith(".__init__"):
                continue
            init = touch(other_path)
            owner = (other_scope or "").rsplit(".", 1)[0]
            for key, (param, position) in ((k, v) for k, v in (init.kept_params.items() if init else ())
                                           if k.startswith(owner + ".") and len(v) == 2):
                for entry in given:
                    slot, _, qual = entry.partition("=")
                    if slot == param or (position and slot == f"#{position}"):
                        cls = self.class_named(path, facts, qual, touch)
                        if cls is not None:
                            program.kept[(other_self[0], other_self[1], key.split(".", 1)[1])] = cls

    def subclasses(self, cls: tuple[Path, str], facts_of: FactsGetter) -> list[tuple[Path, str]]:
        """The project classes deriving from ``cls`` (directly or not), found by its name."""
        key = (f"{cls[1]}@subclasses", cls[0])
        if key not in self._registered:
            out: list[tuple[Path, str]] = []
            todo = [cls]
            while todo and len(out) < MAX_CANDIDATES:
                base = todo.pop(0)
                for other_path in self.files_naming(base[1]):
                    other = facts_of(other_path)
                    for sub, bases in (other.bases.items() if other is not None and not other.error else ()):
                        if (other_path, sub) not in out and any(
                                b.rsplit(".", 1)[-1] == base[1]
                                and self.class_named(other_path, other, b, facts_of) == base for b in bases):
                            out.append((other_path, sub))
                            todo.append((other_path, sub))
            self._registered[key] = out
        return self._registered[key]

    def class_named(self, path: Path, facts: FileFacts, name: str, facts_of: FactsGetter,
                    hops: int = 0, seen: set | None = None) -> Receiver:
        """The project class ``name`` stands for in ``path`` (``base.BaseTrainer``, ``Net``), by the
        file that defines it: imports and a package's re-exports are followed, each module once
        (modules that star-import each other would otherwise be walked once per path)."""
        if name in facts.classes:
            return path, name
        seen = set() if seen is None else seen
        if hops >= MAX_REEXPORTS or (path, name) in seen:
            return None
        seen.add((path, name))
        head, _, rest = name.partition(".")
        if not rest and head in facts.imports and facts.imports[head] != name:
            return self.class_named(path, facts, facts.imports[head], facts_of, hops + 1, seen)
        if not rest:  # `from .resnet import *` in a package's __init__.py
            for star in facts.star_imports:
                found = self.resolver.resolve(path, star)
                other = facts_of(found[0]) if found and not found[1] and found[0] != path else None
                cls = self.class_named(found[0], other, name, facts_of, hops + 1, seen) \
                    if found and other is not None and not other.error else None
                if cls is not None:
                    return cls
            return None
        found = self.resolver.resolve(path, name)
        if not found or not found[1] or "." in found[1]:
            return None
        other = facts_of(found[0])
        if other is None or other.error:
            return None
        return self.class_named(found[0], other, found[1], facts_of, hops + 1, seen)

    def members(self, path: Path, facts: FileFacts, facts_of: FactsGetter, hops: int = 0,
                seen: set | None = None) -> Iterator[Target]:
        """What ``getattr(module, name)(...)`` may run: each public function of the module, and
        each public class's ``__init__``, its own or a re-exported one (a package's ``__init__.py``
        naming its models). Each module once: star imports may form cycles."""
        seen = set() if seen is None else seen
        if path in seen:
            return
        seen.add(path)
        for name in facts.functions:
            if "." not in name and not name.startswith("_"):
                yield path, name, None
        for name in facts.classes:
            found = self.method_of((path, name), "__init__", facts_of) if not name.startswith("_") else None
            if found is not None:
                yield found[0], found[1], (path, name)
        if hops >= MAX_REEXPORTS:
            return
        for alias, qual in facts.imports.items():
            resolved = self.resolver.resolve(path, qual) if not alias.startswith("_") else None
            if not resolved or not resolved[1] or "." in resolved[1]:
                continue
            other = facts_of(resolved[0])
            if other is None or other.error:
                continue
            if resolved[1] in other.functions:
                yield resolved[0], resolved[1], None
            cls = self.class_named(resolved[0], other, resolved[1], facts_of)
            found = self.method_of(cls, "__init__", facts_of) if cls is not None else None
            if found is not None:
                yield found[0], found[1], cls
        for star in facts.star_imports:
            resolved = self.resolver.resolve(path, star)
            other = facts_of(resolved[0]) if resolved and not resolved[1] and resolved[0] != path else None
            if other is not None and not other.error:
                yield from self.members(resolved[0], other, facts_of, hops + 1, seen)

    def method_of(self, cls: Receiver, method: str, facts_of: FactsGetter,
                  hops: int = 0) -> Optional[tuple[Path, str]]:
        """Where ``method`` of project class ``cls`` is defined: the class itself, else its
        project bases, depth first and left to right (Python's order for single inheritance)."""
        if cls is None or hops >= MAX_REEXPORTS:
            return None
        path, name = cls
        facts = facts_of(path)
        if facts is None or facts.error or name not in facts.classes:
            return None
        if method in facts.classes[name]:
            return path, f"{name}.{method}"
        for base in facts.bases.get(name, ()):
            found = self.method_of(self.class_named(path, facts, base, facts_of), method, facts_of, hops + 1)
            if found is not None:
                return found
        return None

    def build(self, entry: Path, local_only: bool = False) -> Program:
        """The program whose entry is ``entry``. ``local_only`` looks at that file alone (enough to
        decide whether it is an entry at all)."""
        entry = entry.resolve()
        program = Program(entry=entry)
        self._trace(program, local_only)
        facts = self.facts_of(entry)
        program.scopes = list(facts.scopes) if facts is not None else []
        if not local_only and self.launch_hits is not None:
            # what its launchers set holds before its first line runs
            started = [TraceHit(hit, entry, 0, 0, True) for hit in self.launch_hits(entry)]
            program.trace[:0] = started
            program.all_hits[:0] = started
        return program

    # ---- the trace -----------------------------------------------------------------------------
    def config_leaves(self, path: Path) -> dict[str, Any]:
        """A configuration's values (programs/config_files.py), read once per run."""
        try:
            stat = path.stat()
        except OSError:
            return {}
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in self._config_leaves:
            self._config_leaves[key] = config_files.leaves(path)
        return self._config_leaves[key]

    def _trace(self, program: Program, local_only: bool) -> None:
        """Walk the entry's module level in order, stepping into called project functions and,
        at the line that imports them, into project modules' module level (their own main
        guards excluded). Imports are followed MAX_IMPORT_DEPTH deep and at most MAX_MODULES
        modules per program, so a script inside a large package does not parse all of it."""
        # walks done, and whether one of them was on the default path (an off-default walk is
        # done again when the default path reaches the same function)
        visited: dict[tuple[Path, Optional[str], Receiver, Bindings], bool] = {}
        reached: dict[int, OffDefault] = {}  # id(hit) -> None once the default path reached it
        held: set[int] = set()  # hits with a test of their function's parameters (Hit.needs) that held
        touched: list[Path] = []
        tested: dict[tuple[int, Optional[str]], set[str]] = {}
        configs_read: set[Path] = set()
        binding_walks: dict[tuple[int, Optional[str]], set[Bindings]] = {}
        options: dict[str, Any] = {}  # command-line options of the modules touched, at their defaults
        unsettled: set[str] = set()

        def off_by_options(facts: FileFacts, line: int, col: int, scope: Optional[str] = None,
                           bindings: Bindings = ()) -> bool:
            """Inside a branch the program's option defaults rule out (``if opt.model ==
            "densenet":`` in model.py, --model defaulting to "resnet" in opts.py), or the values
            the caller gave the function's parameters (``if padding_type == "replicate":``)?"""
            known = {k: v for k, v in options.items() if k not in unsettled}
            params = {(scope, name): value for name, value in bindings} if scope else None
            for form, body, orelse, after in facts.option_tests:
                truth = form_truth(form, known, params)
                if truth is None:
                    continue
                for span in (body,) if truth is False else (orelse, after):
                    if span is not None and span[:2] <= (line, col) <= span[2:]:
                        return True
            return False

        def touch(path: Path) -> Optional[FileFacts]:
            if path not in touched:
                if len(touched) >= MAX_MODULES:
                    return None
                touched.append(path)
                facts = self.facts_of(path)
                if facts is not None and not facts.error:
                    learn_options(facts)
                    for name in facts.config_files:
                        found = config_files.find(name, [path.parent, program.entry.parent], self.resolver.roots)
                        if found is not None and found not in configs_read:
                            configs_read.add(found)
                            learn_options(FileFacts(path=str(found), options=self.config_leaves(found)))
            facts = self.facts_of(path)
            return None if facts is None or facts.error else facts

        def tested_params(facts: FileFacts, scope: Optional[str]) -> set[str]:
            """The parameters of ``scope`` its tests read, or that it passes on to a call (where
            the callee may test them: ``ResnetBlock(dim, padding_type=padding_type)``)."""
            key = (id(facts), scope)
            if key not in tested:
                forms = [form for form, *_ in facts.option_tests]
                forms += [form for rows in facts.call_args.values() for _, _, form in rows if form is not None]
                forms += [hit.needs for hit in facts.hits if hit.needs is not None]
                tested[key] = {name for form in forms for function, name in form_params(form) if function == scope}
            return tested[key]

        def passed(facts: FileFacts, site: CallSite, bindings: Bindings, callee: Optional[FileFacts],
                   scope: Optional[str]) -> Bindings:
            """What the call passes to the callee's tested parameters, or their defaults."""
            if callee is None or scope is None:
                return ()
            wanted = tested_params(callee, scope) or tested_params(callee, f"{scope}.__init__")
            if not wanted:
                return ()
            signature = callee.params.get(scope) or callee.params.get(f"{scope}.__init__") or []
            args = facts.call_args.get(f"{site.line}:{site.col}")
            if args is None:
                return ()  # a call whose arguments were not kept (a chained call): nothing is known
            walks = binding_walks.setdefault((id(callee), scope), set())
            starred = any(keyword == "*" for keyword, _, _ in args)
            known = {k: v for k, v in options.items() if k not in unsettled}
            mine = {(site.scope, name): value for name, value in bindings}
            out = []
            for name, position, default in signature:
                if name not in wanted:
                    continue
                given = next((form for keyword, at, form in args if keyword == name
                              or (not keyword and position >= 0 and at == position)), None)
                if given is None and any(keyword == name or (not keyword and position >= 0 and at == position)
                                         for keyword, at, _ in args):
                    continue  # passed, but not as anything known
                if given is None and starred:
                    continue  # f(*args, **kwargs): may be passed
                found, value = form_value(given, known, mine) if given is not None else \
                    (form_value(default, known) if default is not None else (False, None))
                if found:
                    out.append((name, value))
            bound = tuple(sorted(out, key=lambda item: item[0]))
            if bound not in walks and len(walks) >= MAX_BINDINGS:
                return ()  # called with many different values: walked once more, deciding nothing
            walks.add(bound)
            return bound

        def learn_options(facts: FileFacts) -> None:
            """The program's command-line options so far: a default two modules disagree on, or
            an option some module assigns, is unknown."""
            for key, default in facts.options.items():
                if key in options and options[key] != default:
                    unsettled.add(key)
                if "." in key and MERGED in unsettled:
                    unsettled.add(key)
                options.setdefault(key, default)
            unsettled.update(facts.options_set)
            if MERGED in facts.options_set:  # cfg.merge_from_file(args.config): any value may change
                unsettled.update(key for key in options if "." in key)

        def targets(path: Path, facts: FileFacts, site: CallSite, receiver: Receiver = None,
                    hops: int = 0, seen: dict | None = None) -> Iterator[Target]:
            """The functions a call may run. Recursive but bounded: each step follows a table, a
            star import or a re-export (MAX_REEXPORTS of those at most) or shortens the name, and
            each name in each module is followed once per call (a package whose modules star-import
            each other would otherwise be walked once per path through it: exponential)."""
            name = site.target
            seen = {} if seen is None else seen
            key = (path, name, receiver, site.scope)
            if seen.get(key, MAX_REEXPORTS + 1) <= hops:  # followed already, from as near or nearer
                return
            seen[key] = hops
            head, _, method = name.partition(".")
            if name.endswith("()") and hops < MAX_REEXPORTS:  # creator = factory(cfg); creator(...)
                for made_path, made_scope, _ in list(targets(path, facts, CallSite(name[:-2], site.line, site.col,
                                                                                   site.scope), None, hops + 1, seen)):
                    made = touch(made_path)
                    for ref in made.returns.get(made_scope or "", ()) if made is not None else ():
                        yield from targets(made_path, made, CallSite(ref, site.line, site.col, None), None,
                                           hops + 1, seen)
                # TaskRegistry.lookup(name)(config): one of what was registered through that object
                registry = self.registry_object(path, facts, name[:-2]) if not local_only else None
                chosen = self.registered_through(registry) if registry is not None else []
                made_by = []
                for cls_path, cls_name in chosen:
                    other = touch(cls_path)
                    init = self.method_of((cls_path, cls_name), "__init__", touch) \
                        if other is not None and cls_name in other.classes else None
                    if init is not None:
                        made_by.append((init[0], init[1], (cls_path, cls_name)))
                    elif other is not None and cls_name in other.functions:
                        made_by.append((cls_path, cls_name, None))
                if len(made_by) > 1 and registry is not None:
                    program.choices[(path, site.line)] = f"one of {len(made_by)} registered with {registry[1]}"
                yield from made_by
                return
            if TABLE_ITEM + "." in name and hops < MAX_REEXPORTS:
                # trainer.train() with trainer = Trainer(opt), Trainer = train_factory[task]: the
                # method of each class the table holds (its __init__ names the class)
                table, _, called = name.partition(TABLE_ITEM + ".")
                classes = {cls for _, _, cls in targets(path, facts, CallSite(table, site.line, site.col, site.scope),
                                                        None, hops + 1, seen) if cls is not None}
                chosen = [(found, cls) for cls in sorted(classes) for found in [self.method_of(cls, called, touch)]
                          if found is not None]
                if len(chosen) > 1:
                    program.choices[(path, site.line)] = f"one of {len(chosen)} classes of {table.rsplit('.', 1)[-1]}"
                for found, cls in chosen:
                    yield found[0], found[1], cls
                return
            if name.startswith(EVALUATED) and hops < MAX_REEXPORTS:
                # eval(opt.model).Model(opt), --model defaults to "Pyraformer" (a module imported
                # as that name, or a function or class of this file): that name's Model
                default = options.get(site.key) if site.key and site.key not in unsettled else None
                if isinstance(default, str) and default.isidentifier():
                    rest = name[len(EVALUATED):]
                    spelled = facts.exports.get(default, default)
                    program.choices[(path, site.line)] = f"--{site.key} defaults to {default}"
                    yield from targets(path, facts, CallSite(f"{spelled}.{rest}" if rest else spelled, site.line,
                                                             site.col, site.scope), receiver, hops + 1, seen)
                return
            if name.startswith(SPELLED):
                # candidates are read, not made part of the program: only the class chosen is
                spelled = self.spelled_class(name[len(SPELLED):], path, self.facts_of) if not local_only else None
                if spelled is not None and touch(spelled[0][0]) is not None and touch(spelled[1][0]) is not None:
                    (cls_path, cls_name), found = spelled
                    program.choices[(path, site.line)] = (f"assumes {name[len(SPELLED):].rsplit('.', 1)[0]} is a "
                                                          f"{cls_name} ({cls_path.name})")
                    yield found[0], found[1], (cls_path, cls_name)
                return
            if name == CONFIGURED and not local_only:  # instantiate(cfg.model): what the configs name
                chosen = []
                for dotted_name in self.config_targets():
                    if len(chosen) >= MAX_CANDIDATES:
                        break
                    module, _, cls = dotted_name.rpartition(".")
                    found = self.resolver.resolve(program.entry, module)
                    other = touch(found[0]) if found and not found[1] else None
                    init = self.method_of((found[0], cls), "__init__", touch) if other is not None else None
                    if init is not None:
                        chosen.append((init[0], init[1], (found[0], cls)))
                    elif other is not None and cls in other.functions:
                        chosen.append((found[0], cls, None))
                if len(chosen) > 1:
                    program.choices[(path, site.line)] = f"one of {len(chosen)} classes the project's configs name"
                yield from chosen
                return
            if name.endswith(".*"):  # getattr(models, cfg.arch)(...): one of the module's callables
                found = self.resolver.resolve(path, name[:-2]) if not local_only else None
                other = touch(found[0]) if found and not found[1] and found[0] != path else None
                if other is not None:
                    chosen = []
                    for target in self.members(found[0], other, touch):
                        if len(chosen) >= MAX_CANDIDATES:
                            break
                        chosen.append(target)
                    if len(chosen) > 1:
                        program.choices[(path, site.line)] = f"one of {len(chosen)} callables of {name[:-2]}"
                        default = options.get(site.key) if site.key and site.key not in unsettled else None
                        named = [t for t in chosen if isinstance(default, str) and (
                            t[1] in (default, f"{default}.__init__") or (t[2] is not None and t[2][1] == default))]
                        if named:  # --model defaults to one of them: the others run only on request
                            program.off_choices[(path, site.line)] = {(t[0], t[1]) for t in chosen if t not in named}
                            program.choices[(path, site.line)] = (f"--{site.key} defaults to {default} "
                                                                  f"(one of {len(chosen)} callables of {name[:-2]})")
                    yield from chosen
                return
            if head == "self" and receiver is not None and "." not in method and not local_only:
                found = self.method_of(receiver, method, touch)  # the object's own class first
                if found is not None:
                    yield found[0], found[1], receiver
                    return
            if head == "self" and receiver is not None and method.count(".") == 1 and not local_only:
                attribute, _, called = method.partition(".")
                cls = program.kept.get((receiver[0], receiver[1], attribute))
                found = self.method_of(cls, called, touch) if cls is not None else None
                if found is not None:  # self.netD.train_step(): the class of what was handed over
                    yield found[0], found[1], cls
                    return
            if head in facts.classes and method and "." not in method:
                # Cls.method(...), super().method(...): defined there or inherited; `self` stays
                # the object being walked when there is one
                cls = receiver if receiver is not None and site.scope and "." in site.scope else (path, head)
                found = self.method_of((path, head), method, touch) if not local_only else (
                    (path, name) if method in facts.classes[head] else None)
                if found is not None:
                    yield found[0], found[1], cls
                return
            if name in facts.functions:
                yield path, name, None
                return
            if name in facts.tables:  # MODELS[name](...): any function of the table may run
                for ref in facts.tables[name] if hops < MAX_REEXPORTS else ():  # tables may name each other
                    if ref != name:
                        yield from targets(path, facts, CallSite(ref, site.line, site.col, None), None, hops + 1, seen)
                # and what decorators register there (@register_model): read to find them, and
                # only those become part of the program
                chosen = self.registered(path, facts, name, self.facts_of) if not local_only else []
                for cls_path, cls_name in chosen:
                    other = touch(cls_path)
                    if other is None:
                        continue
                    if cls_name in other.classes:
                        init = self.method_of((cls_path, cls_name), "__init__", touch)
                        if init is not None:
                            yield init[0], init[1], (cls_path, cls_name)
                    elif cls_name in other.functions:
                        yield cls_path, cls_name, None
                if len(chosen) > 1:
                    writers = ", ".join(facts.registrars.get(name, ()))
                    program.choices[(path, site.line)] = f"one of {len(chosen)} registered with {writers}"
                return
            if name in facts.classes:  # Cls(...): its __init__, its own or inherited
                found = self.method_of((path, name), "__init__", touch) if not local_only else (
                    (path, f"{name}.__init__") if "__init__" in facts.classes[name] else None)
                if found is not None:
                    yield found[0], found[1], (path, name)
                return
            head = name.split(".")[0]
            if head not in facts.imports and head not in facts.functions and facts.star_imports \
                    and ("." not in name or head not in facts.classes and head not in {
                        star.rsplit(".", 1)[-1] for star in facts.star_imports}) \
                    and not local_only and hops < MAX_REEXPORTS:
                # a package passes on what it star-imports: `from .resnet import *` in models/__init__.py
                # (a function, or a class and its method: `Trainer.train` from `from .trainer import *`)
                passed_on = False
                for star in facts.star_imports:
                    found = self.resolver.resolve(path, star)
                    other = touch(found[0]) if found and not found[1] and found[0] != path else None
                    # (a dotted name only where that module defines its head: `cifar_nets.Net`
                    # written through `from cifar_nets import *` is the module's own name)
                    if other is not None and (head in other.functions or head in other.classes
                                              or head in other.imports or ("." not in name and other.star_imports)):
                        passed_on = True
                        yield from targets(found[0], other, CallSite(name, site.line, site.col, None), None,
                                           hops + 1, seen)
                if passed_on or "." not in name:
                    return
            if head in facts.imports and not local_only and hops < MAX_REEXPORTS and (
                    "." not in name or facts.imports[head] != head and not self.resolver.resolve(path, name)):
                # a package re-exports it: `from .models import build`, and a method of a class it
                # re-exports (`pkg.Learner.update` where pkg/__init__.py imports Learner); a name
                # already qualified (`Unet.Unet`, the module's own function) is left as it is
                name = facts.imports[head] + name[len(head):]
            # a module the file imports (a local variable's method, `helper.run()`, is never a
            # module's function, even where a helper.py lies beside)
            imported = name.startswith(".") or head in facts.imports or any(
                q.split(".")[0] == head for q in [*facts.imports.values(), *facts.star_imports])
            found = self.resolver.resolve(path, name) if "." in name and imported and not local_only else None
            if found:  # models.net.build, .seeding.seed_all: a function of a project module
                other_path, rest = found
                other = touch(other_path)
                if other is not None and rest:
                    yield from targets(other_path, other, CallSite(rest, site.line, site.col, site.scope),
                                       receiver, hops + 1, seen)
                return
            if "." in name:  # self.train(), trainer.fit(): a method of a class in this file
                method = name.rsplit(".", 1)[1]
                local = [cls for cls, methods in facts.classes.items() if method in methods]
                for cls in local:
                    yield path, f"{cls}.{method}", (path, cls)
                if not local and not local_only:
                    yield from self.imported_methods(path, facts, name, touch)

        outlined: set[Path] = set()

        def skim(path: Path, depth: int) -> Optional[list[Path]]:
            """Run an imported module from its outline when its module level cannot matter: the
            modules it imports, to be followed; None when it has to be parsed. The entry's own
            imports are parsed when they mention a seed or a switch: a helper there may be reached
            in ways the trace cannot follow (``trainer.setup()``), and its seeding still counts."""
            if self.outline_of is None or path in touched or len(outlined) >= MAX_OUTLINES:
                return None
            sketch = self.outline_of(path)
            if sketch is None or sketch.active or (depth < 2 and sketch.mentions & self.provider_tokens):
                return None
            if any(self.resolver.resolve(path, name) for name in sketch.calls):
                return None  # its module level calls project code
            outlined.add(path)
            return self._outline_imports(path, sketch) if depth < MAX_IMPORT_DEPTH else []

        def run(path: Path, scope: Optional[str], anchor: Optional[tuple[int, int]], depth: int,
                via: tuple[tuple[Path, int], ...] = (), receiver: Receiver = None,
                optional: OffDefault = None, bindings: Bindings = ()) -> Iterator[Step]:
            """A module's level or a function, in order: what it runs (a module it imports, a
            function it calls) is yielded where it runs, and walked before this goes on."""
            key = (path, scope, receiver, bindings)
            if key in visited and (visited[key] or optional is not None):
                return
            visited[key] = optional is None
            if scope is None and anchor is not None and path != program.entry:
                skimmed = skim(path, depth)
                if skimmed is not None:
                    for module in skimmed:
                        yield module, None, anchor, depth + 1, (), None, optional, ()
                    return
            facts = touch(path)
            if facts is None:
                return

            def off(line: int, col: int) -> OffDefault:
                if optional is not None:
                    return optional
                inside = any((l0, c0) <= (line, col) <= (l1, c1) for l0, c0, l1, c1 in facts.off_default_spans)
                return (path, line) if inside or off_by_options(facts, line, col, scope, bindings) or (
                    facts.flag_tests and self.flag_off(path, facts, line, col)) else None
            # the main guard runs only in the entry file
            scopes = {scope, MAIN_GUARD} if scope is None and path == program.entry else {scope}
            events: list[tuple[int, int, int, Union[Hit, CallSite, Path]]] = []
            for hit in facts.hits + facts.worker_hits:  # a worker's method runs here: the program calls it
                if hit.scope in scopes:
                    events.append((hit.line, hit.col, 1, hit))
            for site in facts.calls:  # not into what runs only outside training (`else:` of `if FLAGS.train:`)
                if site.scope in scopes and not site.inference:
                    events.append((site.line, site.col, 2, site))
            if scope is None and not local_only and depth < MAX_IMPORT_DEPTH:
                for line, module in self.local_imports(path, facts):
                    events.append((line, 0, 0, module))
            events.sort(key=lambda e: (e[0], e[1], e[2]))
            for line, col, _, event in events:
                here = anchor or (line, col)
                if isinstance(event, Hit):
                    if event.needs is not None:  # a match only where the caller passes a value that makes it
                        known = {k: v for k, v in options.items() if k not in unsettled}
                        if form_truth(event.needs, known, {(scope, n): v for n, v in bindings} if scope else None):
                            held.add(id(event))
                        else:
                            continue
                    # a hit on a branch the options or the caller's arguments rule out
                    ruled_out = (path, line) if optional is None and ((facts.option_tests and off_by_options(
                        facts, line, col, scope, bindings)) or (facts.flag_tests and self.flag_off(
                            path, facts, line, col))) else optional
                    if reached.get(id(event), False) is not None:
                        reached[id(event)] = ruled_out
                    program.trace.append(TraceHit(event, path, here[0], here[1], True, via, ruled_out))
                elif isinstance(event, Path):
                    yield (event, None, None if event == program.entry and anchor is None else here, depth + 1, via,
                           None, off(line, col), ())
                else:
                    found = list(targets(path, facts, event, receiver))
                    self._note_kept(program, path, facts, event, found, touch)
                    unchosen = program.off_choices.get((path, event.line), set())
                    for other_path, other_scope, other_self in found + self.overrides(found, program, path, line,
                                                                                       touch):
                        program.callers.setdefault((other_path, other_scope), set()).add((path, line, scope))
                        yield (other_path, other_scope,
                               None if other_path == program.entry and anchor is None else here, depth,
                               via + ((path, line),), other_self,
                               off(line, col) or ((path, line) if (other_path, other_scope) in unchosen else None),
                               passed(facts, event, bindings, touch(other_path), other_scope))

        # the walks under way, innermost last: a stack, not recursion, so a chain of a thousand
        # calls fits (imports are cut at MAX_IMPORT_DEPTH, calls only where they were walked)
        # a function's training calls, by walk key: a second call of train() trains again (the
        # last training call ends training, not the first), though its body is walked once
        trained: dict[tuple[Path, Optional[str], Receiver, Bindings], list[TraceHit]] = {}
        # the call site a function was first walked from: the same call reached again (a runner's
        # handed function noted twice, `typer.run(main)`) is that one call, no second training
        first_from: dict[tuple[Path, Optional[str], Receiver, Bindings], Any] = {}
        replays = 0
        stack = [run(program.entry, None, None, 0)]
        walks: list[tuple[tuple[Path, Optional[str], Receiver, Bindings], int, bool]] = \
            [((program.entry, None, None, ()), 0, True)]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                key, start, on_default = walks.pop()
                # the walk on the default path replaces one made through an off-default branch
                if key not in trained or (on_default and len(program.trace) > start):
                    trained[key] = [th for th in program.trace[start:] if th.hit.owner == REPLAYED]
                continue
            key = (step[0], step[1], step[5], step[7])
            walked_off_default_only = visited.get(key) is False and step[6] is None  # it is walked again now
            if trained.get(key) and step[4] and replays < MAX_REPLAYS and not walked_off_default_only \
                    and first_from.get(key) != (step[2], step[4]):
                replays += 1  # walked before: its training calls run again here
                here = step[2] or (step[4][-1][1], 0)  # where the entry runs it, or this call in the entry
                program.trace.extend(TraceHit(th.hit, th.path, here[0], here[1], True, step[4], step[6])
                                     for th in trained[key])
            first_from.setdefault(key, (step[2], step[4]))
            walks.append((key, len(program.trace), step[6] is None))
            stack.append(run(*step))
        program.modules = touched
        for path in touched:
            facts = self.facts_of(path)
            if facts is None:
                continue
            for hit in facts.hits + [h for h in facts.worker_hits if id(h) in reached]:
                if hit.needs is not None and id(hit) not in held:
                    continue  # no call of its function passes what makes it a match
                ordered = id(hit) in reached
                if path != program.entry and hit.scope == MAIN_GUARD:
                    continue  # another script's main guard never runs in this program
                item = TraceHit(hit, path, hit.line if path == program.entry else 0, hit.col, ordered,
                                optional=reached.get(id(hit)))
                program.all_hits.append(item)


def _line_of_relative(facts: FileFacts, qual: str) -> int:
    stripped = qual.lstrip(".")
    for level, module, line in facts.relative_imports:
        if stripped.startswith(module):
            return line
    return 0


def is_entry(facts: FileFacts, entry_markers: Callable[[FileFacts], bool]) -> bool:
    """A file is a program's entry if it has a main guard or does work at module level."""
    return facts.main_guard is not None or entry_markers(facts)
