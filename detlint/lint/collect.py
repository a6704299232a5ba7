"""One libcst walk per file: resolves import aliases and records every knowledge-base match.

No metadata provider but positions is used; aliases (``import tensorflow as tf``,
``from tensorflow.keras import layers as L``, ``tf.compat.v1``) are tracked here, in the same
walk. The result, ``FileFacts``, does not depend on the target version, so it can be cached.
"""
from __future__ import annotations

import builtins
import re
from collections import Counter
from dataclasses import replace
from typing import Any, Iterator, Optional, Sequence, Union

import libcst as cst

from detlint.lint import names
from detlint.lint.flow import ordering
from detlint.lint import stand_ins
from detlint.lint.flow import training_branches
from detlint.lint.flow.branches import Branches
from detlint.lint.files.line_breaks import python_lines
from detlint.lint.conditions import (MISSING, Ref, argument, bool_condition, bound_names, check, check_kwargs, dotted,
                                     known_text, literal, matched_argument)
from detlint.lint.flow.data_batches import batch_only_ops, loader_constructor
from detlint.lint.flow.call_values import CallValues
from detlint.lint.flow.passed_values import PassedValues
from detlint.lint.flow.handed_functions import HandedFunctions
from detlint.lint.flow.default_branches import default_truth, test_form
from detlint.lint.flow.option_forms import all_of, form_options, form_params, plain_value
from detlint.lint.flow.index_shapes import one_index_per_row
from detlint.lint.flow.optimised_inputs import input_optimisers
from detlint.lint.flow.manual_updates import GRADIENT_STEP, assigned_step, augmented_step, mapped_step
from detlint.lint.flow.sys_path import mentions_sys_path, sys_path_folders
from detlint.lint.flow.config_trees import ConfigTrees, key_of
from detlint.lint.flow.deferred_steps import DeferredSteps
from detlint.lint.flow.frozen_models import FrozenModels
from detlint.lint import python2
from detlint.lint.flow.shown_values import ShownValues
from detlint.lint.flow.gradient_paths import GradientPaths
from detlint.lint.flow.gradient_sinks import CallRoles, dead_ops
from detlint.lint.flow.layerflow import INPUT_STAGE, STACK, TRAINABLE, LayerFlow
from detlint.lint.names import EXTERNAL_MODULES
from detlint.lint.positions import Span, positions
from detlint.lint.walk import walk
from detlint.lint.ftypes import LOCAL_FRAMEWORK, LOCAL_FUNCTION, LOCAL_OTHER, LOCAL_RETURNS, UNKNOWN, CallSite, FileFacts, Hit, Ref, quiet_compile
from detlint.lint.programs.program import CONFIGURED, EVALUATED, MAIN_GUARD, MERGED, SPELLED, TABLE_ITEM
from detlint.knowledge.kb import Condition, KnowledgeBase

NOQA_RE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
WORD_RE = re.compile(r"\w+")
# submodules reached without their attribute's name: iterated, looked up by a computed name
DYNAMIC_SUBMODULES = re.compile(r"\b(?:named_)?(?:children|modules)\s*\(|\b_modules\b|__dict__|\bvars\s*\(|"
                                r"\b[gs]etattr\s*\(\s*self\b")
FILE_NOQA_RE = re.compile(r"^\s*#\s*(?:flake8|detlint)[:=]\s*noqa\s*$", re.IGNORECASE | re.MULTILINE)
ENV_CALLS = {"os.environ.setdefault", "os.putenv", "os.environ.__setitem__"}
KERAS_FLAVOURS = {"keras": "keras", "tf_keras": "tf_keras", "tensorflow.keras": "tf.keras",
                  "tensorflow.python.keras": "tf.keras", "tensorflow.compat.v1.keras": "tf.keras"}

Node = Union[cst.CSTNode]
BUILTIN_NAMES = frozenset(dir(builtins))
RUNNERS, DISPLAYS = "group:function-runners", "group:display-calls"
# names a program's parsed options or loaded configuration is usually held in: a test of one of
# their attributes that this file does not define is decided by the program (FileFacts.option_tests)
OPTION_HOLDERS = frozenset({"args", "opt", "opts", "options", "cfg", "config", "conf", "hparams", "hps", "FLAGS",
                            "flags", "params", "hp", "argv_args"})
WRAPPERS = "group:function-wrappers"
STOPS = "group:gradient-stops"
CONFIG_BUILDERS = "group:config-instantiators"
CONFIG_TREES = "group:config-trees"
CONFIG_MERGERS = "group:config-mergers"
INFERENCE = "group:inference"  # an Estimator's evaluate/predict runs its model_fn without training
CPU_BLOCKS = "group:cpu-device-blocks"
RETURNS_RECEIVER = "group:returns-receiver"
GRADIENT_TARGETS, LOSS_COLLECTIONS = "group:gradient-targets", "group:loss-collections"
NO_GRADIENT, INDEX_TAKING = "group:gradient-free-results", "group:index-taking-calls"
DATA_SOURCES = "group:data-sources"  # what they return is input data: nothing trainable upstream
WEIGHT_MAKERS = "group:weight-making-ops"  # tf.layers.dense(x): trained whatever x is
DIFFERENTIATED = "group:differentiated-inputs"  # tf.gradients(loss, x), tape.watch(x)
HOOKS = "group:library-hooks"  # what a library calls on a subclass's object: read by programs/unused.py
HOUSEKEEPING = "group:module-housekeeping"  # model.eval(), model.cuda(): no forward pass
MODULE_IMPORTERS = "group:module-importers"  # importlib.import_module(name): an import by name
VALUE_MAKERS = "group:value-makers"  # torch.Tensor(...): capitalised, yet no layer or model
TAPES = "group:gradient-tapes"
NO_GRAD_BLOCKS = "group:gradient-free-blocks"  # with torch.no_grad(): / @torch.inference_mode()
# what builds a Keras model: a function that does so runs ops on symbolic tensors outside any tape;
# code that makes a symbolic input (or reads a model's) does so itself
MODEL_MAKERS = frozenset({"Input", "InputLayer", "Model", "Sequential"})
SYMBOLIC_MAKERS = frozenset({"Input", "InputLayer"})
SAFE_POSITION = 2  # parameters from the third on are passed by keyword in practice
MAX_BOUND_VALUES = 4  # values of one local name kept for referenced_names
# what a constructor makes, for LayerFlow: the first of these groups its name is in decides
LAYER_KINDS = (("group:layer-stacks", STACK), ("group:input-stage-layers", INPUT_STAGE),
               ("group:trainable-layers", TRAINABLE))
# consulted here (they shape the trace or mark what is only shown), never a finding's evidence
NOT_EVIDENCE = frozenset({RUNNERS, HOOKS, DISPLAYS, WRAPPERS, STOPS, LOSS_COLLECTIONS, NO_GRADIENT, INDEX_TAKING, TAPES,
                          NO_GRAD_BLOCKS, CONFIG_BUILDERS, CONFIG_TREES, CONFIG_MERGERS, CPU_BLOCKS, RETURNS_RECEIVER,
                          "group:function-holders", "group:command-line-options",
                          *(group for group, _ in LAYER_KINDS)})


def parse_noqa(source: str) -> tuple[dict[int, Optional[frozenset[str]]], bool]:
    """Line -> codes (None = every code), and whether the file opts out as a whole."""
    out: dict[int, Optional[frozenset[str]]] = {}
    if "noqa" not in source.lower():
        return out, False
    for lineno, line in enumerate(python_lines(source), start=1):  # as libcst numbers them
        if "#" not in line:
            continue
        match = NOQA_RE.search(line)
        if match:
            codes = match.group("codes")
            out[lineno] = frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else None
    return out, bool(FILE_NOQA_RE.search(source))


class Collector(CallValues, HandedFunctions, PassedValues, cst.CSTVisitor):
    def __init__(self, kb: KnowledgeBase, facts: FileFacts, source: str = "",
                 links: Optional[dict[str, str]] = None, spans: Optional[dict[cst.CSTNode, Span]] = None) -> None:
        """``spans``: every node's position (``positions.positions`` of the module visited)."""
        super().__init__()
        self.spans = spans if spans is not None else {}
        self.kb = kb
        self.facts = facts
        self.source = source
        self.branches = Branches()
        self.top_function: Optional[cst.FunctionDef] = None  # the function whose scope the walk is in
        self.nested_defs: dict[str, tuple[int, int, int, int]] = {}  # functions defined in top_function
        self.aliases: dict[str, str] = {}
        self.table_held: dict[tuple[Optional[str], str], str] = {}  # Trainer = train_factory[task]: the table
        self.partial_args: dict[str, tuple[cst.Arg, ...]] = {}  # conv = partial(slim.conv2d, ...): its arguments
        # names of project modules this file imports, as it spells them, and what they really are
        # (``pkg.backend.keras`` -> ``tensorflow.keras``); classes that derive from a framework class
        links = links or {}
        self.links = {name: target for name, target in links.items()
                      if target not in (LOCAL_FRAMEWORK, LOCAL_FUNCTION) and not target.startswith(LOCAL_RETURNS)}
        # project functions another module defines that make a framework object (LOCAL_RETURNS)
        self.makers = {name: target[len(LOCAL_RETURNS):] for name, target in links.items()
                       if target.startswith(LOCAL_RETURNS)}
        self.return_kinds: dict[str, list[Optional[str]]] = {}  # this file's functions: what each return makes
        self.framework_classes = {name for name, target in links.items() if target == LOCAL_FRAMEWORK}
        self.factories = {name for name, target in links.items() if target == LOCAL_FUNCTION}
        self.star_modules: list[str] = []
        self.instances: dict[str, str] = {}
        self.local_instances: dict[str, str] = {}  # name -> class of this file it is an object of
        self.arms: list[tuple[int, int]] = []  # if/elif/else arms being walked (visit_If_body)
        self.ladders: dict[int, int] = {}  # an elif's If -> the first If of its ladder
        self.bound_arm: dict[str, Optional[tuple[int, int]]] = {}  # instances' names -> the arm binding them
        self.origins: dict[str, str] = {}  # name -> what made its value (``df`` -> ``pandas.read_csv``)
        self.result_of: dict[str, str] = {}  # name -> the method whose result it holds (``minimize``)
        self.call_bound: set[str] = set()  # module-level names last bound to what a call made
        # the blocks being walked, innermost last, and whether each is a def's or class's body
        self.suites: list[ordering.Suite] = []
        self.def_bodies: set[int] = set()
        self.made_by: dict[str, str] = {}  # name -> the project function whose call made it
        self.bound_attribute: dict[int, str] = {}  # id(value) -> "self.rng" for self.rng = value
        # "Cls.__init__" -> its parameters (name -> position after self, "" keyword-only)
        self.init_params: dict[str, dict[str, str]] = {}
        self.library_bases: dict[str, str] = {}  # top-level class of this file -> its library base
        # (class, attribute) -> the project class an instance of which a method stored there
        self.attribute_made: dict[tuple[str, str], str] = {}
        self.constants: dict[str, Any] = {}
        # (function, name) -> the literal a name of that function was last bound to (`random_seed = 0`)
        self.local_constants: dict[tuple[Optional[str], str], Any] = {}
        self.scope: list[str] = []
        self.classes: list[str] = []
        self.bases: list[list[str]] = []  # the base classes of each class being walked, as written
        # (scope, name) -> the project functions it may hold (``f()``: what calling f returns)
        self.function_names: dict[tuple[Optional[str], str], list[str]] = {}
        self.deferred_steps = DeferredSteps()
        self.shown_values = ShownValues()
        self.config_trees = ConfigTrees()
        self.frozen_models = FrozenModels(
            lambda method: any(owner == HOUSEKEEPING for owner, _ in self.kb.index["method"].get(method, ())))
        self.off_default = 0  # depth of branches a run with default options never takes
        self.cpu_blocks = 0  # depth of device scopes that place what they build on the CPU
        self.depth = 0  # nesting of def/class, to merge nested defs into their top-level scope
        self.in_main_guard = False
        self.version_guards = 0
        self.display_calls: list[cst.Call] = []  # print(...)/plot(...) calls being walked
        self.display_depths: list[int] = []  # ... and how many calls deep each one is
        self.call_depth = 0  # calls being walked
        # address f-strings being walked (f"tcp://localhost:{port}"): a draw there picks a port
        self.formatted = 0
        self.seed_values = 0  # inside `seed = random.randint(...)`: a seed source, not a draw for training
        self.try_bodies = 0  # depth of `try:` bodies being walked (matchers marked outside-try)
        # names the function being walked binds other than by `=` (a loop target...): None until asked
        self.loop_bound: Optional[set[str]] = None
        # where no gradient is taken (see training_branches.py): inference branches and gradient-stop
        # calls being walked; names of the function being walked last bound to a gradient stop,
        # and whether each of its returns so far gave only such values
        self.inference_branches = 0
        self.stop_calls: list[cst.Call] = []
        self.stopped_names: set[str] = set()
        self.returns: list[bool] = []
        self.top_depth = 0
        self.top_no_grad = 0  # no-grad depth where the top function begins
        self.paths = GradientPaths()  # which ops feed the loss their block differentiates
        # backprop ops by scope, keyed by their call's id: whose values only reach calls that
        # pass no gradient on (gradient_sinks.py)
        self.sink_ops: dict[Optional[str], dict[int, tuple[int, int]]] = {}
        # calls by scope (keyed the same way) and the scopes that stop a gradient somewhere
        # (x.detach(), x.data, tf.stop_gradient): there a project call's result may be dropped
        self.call_spots: dict[Optional[str], dict[int, tuple[int, int, int]]] = {}
        self.callee_at: dict[tuple[int, int], str] = {}  # the last name a call's own callee is written with
        self.stopping_scopes: set[Optional[str]] = set()
        self.calls_start = 0  # the first call site of the top-level function being walked
        # tape steps: the tape blocks being walked, lambdas being walked, and per top-level
        # function whether it opens a tape, applies gradients, differentiates otherwise or builds
        # a model, and its ops outside every tape block (value ops written in its own body). In a
        # function that opens a tape and applies its gradients (a training step, which no outer
        # tape records) nothing run outside the tape blocks is differentiated
        self.tapes = 0
        self.no_grad = 0  # depth of blocks and functions in which autograd records nothing
        # calls whose result is read through an attribute at once, and calls bound to a name
        self.read_attribute: dict[int, str] = {}
        self.bound_to: dict[int, str] = {}
        self.lambdas = 0
        self.tape_facts: dict[str, set[str]] = {}
        self.untaped: dict[str, list[tuple[int, int]]] = {}
        self.builders: set[str] = set()
        self.file_flags: set[str] = set()  # "tape", "other gradients", "module model"
        self.plain_functions: list[str] = []  # top-level functions without decorators
        self.plain_classes: list[str] = []  # top-level classes without decorators (a registry's are not plain)
        self.op_attributes: dict[tuple[int, int], str] = {}
        self._input_optimisers: Optional[dict[Optional[str], tuple[set[str], set[str]]]] = None
        self.module_node: Optional[cst.Module] = None  # an op's position -> X of `self.X = <op>`
        self.comments: list[str] = []  # a call left in a comment (`# loss2 = old_loss(x)`) runs nothing
        # parameters with a safe default a rule's argument reads (note_safe_default), waiting for
        # the hit they belong to; keywords any call of this file passes
        self.pending_defaults: list[str] = []
        self.aside_hits: dict[int, tuple[str, ...]] = {}  # id(hit) -> the methods it must be called from
        self.if_depth = 0  # enclosing if statements (the main guard aside)
        self.project_keywords: set[str] = set()  # keywords this file passes to project functions
        # parameters whose default a hit was judged by (argument_note), and those hits: dropped
        # when this file passes the parameter by keyword anywhere
        self.pending_parameters: list[str] = []
        self.default_judged: dict[int, str] = {}
        # tests of the enclosing function's parameters a match waits on (Hit.needs), for the hit
        # being made: ``nn.Upsample(mode=mode)`` holds where a caller passes mode="bilinear"
        self.pending_needs: list[list[Any]] = []
        # (scope, name) -> the values assigned to a plain name there so far (referenced_names
        # follows them: a seed computed from the clock a few lines before it is used)
        self.local_values: dict[tuple[Optional[str], str], list[cst.BaseExpression]] = {}
        self.nested_bound: set[tuple[Optional[str], str]] = set()  # bound in a def nested in that function
        self.keywords: set[str] = set()
        self.local_classes: dict[str, bool] = {}  # class name -> derives from a framework class
        self.framework_imports = set(kb.groups["frameworks"].imports) if "frameworks" in kb.groups else set()
        self.framework_tops = {m.split(".")[0] for m in self.framework_imports}
        # variable -> functions its object keeps (function-holders) and, until a runner runs the
        # object, where it was made: a holder no runner is seen to run runs its functions there
        self.holders: dict[str, list[str]] = {}
        self.unrun_holders: dict[str, tuple[int, int, Optional[str]]] = {}
        self.named_holders: set[int] = set()  # holder calls assigned to a name
        # command-line option -> (default, how it is written, how to pass a value: "--x={value}")
        self.options: dict[str, tuple[Any, str, str]] = {}
        self.reassigned_options: set[str] = set()  # options the code assigns (args.seed = ...)
        self.option_parsers: dict[tuple[str, str], str] = {}  # (class, attribute) -> parser type
        # an if/elif chain's parameters as bound when its first test ran: id(elif If) -> counts
        self.chain_starts: dict[int, dict[str, int]] = {}
        self.chain_bindings: dict[str, int] = {}
        self.flow = LayerFlow(self.layer_kind, self.flow_keys,
                              lambda method: any(o == "group:layer-stacks" for o, _ in kb.index["method"].get(method, ())))

    # ---- names -------------------------------------------------------------------------------
    def qualify(self, name: Optional[str]) -> Optional[str]:
        if not name:
            return None
        head, _, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            if head in self.instances:
                target = self.instances[head]
            else:
                for module in self.star_modules:
                    guess = f"{module}.{head}"
                    if any(c in self.kb.index["call"] for c in names.candidates(guess)):
                        target = guess
                        break
        if target is None:
            return None
        return self.relink(f"{target}.{rest}" if rest else target)

    def relink(self, qual: str) -> str:
        """``pkg.backend.keras.Model`` -> ``tensorflow.keras.Model`` when the project module
        ``pkg.backend`` names ``tensorflow.keras`` ``keras``."""
        if not self.links:
            return qual
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            target = self.links.get(".".join(parts[:cut]))
            if target is not None:
                return ".".join([target, *parts[cut:]])
        return qual

    def is_framework_name(self, qual: str) -> bool:
        return qual == LOCAL_FRAMEWORK or any(names.within(qual, p) for p in self.framework_imports)

    def type_of(self, node: cst.BaseExpression) -> Optional[str]:
        """What an expression is an instance of, where that is known: the constructor's qualified
        name (``sklearn.linear_model.Perceptron``), the first call of a chain
        (``tf.data.Dataset.range(3).map(f)``), or a local class (framework-derived or not)."""
        if isinstance(node, cst.Name):
            return self.instances.get(node.value)
        if isinstance(node, cst.Call):
            inner = node.func
            if isinstance(inner, cst.Attribute) and isinstance(inner.value, cst.Call):
                return self.type_of(inner.value)
            name = dotted(inner)
            if name in self.facts.made_types:  # a function of this file, walked already
                return self.facts.made_types[name]
            if isinstance(inner, cst.Attribute) and isinstance(inner.value, cst.Name) \
                    and self._in_group(RETURNS_RECEIVER, self.qualify(name), node):
                return self.type_of(inner.value)  # group = parser.add_argument_group("model")
            if name in self.library_bases:  # the knowledge base describes its library base
                return names.candidates(self.library_bases[name])[0]
            if name in self.local_classes:
                return LOCAL_FRAMEWORK if self.local_classes[name] else LOCAL_OTHER
            qual = self.qualify(name)
            if not qual:
                return None
            if qual in self.framework_classes:
                return LOCAL_FRAMEWORK  # a project class (keras.Model subclass) of another module
            if qual in self.makers:  # est = build_estimator(cfg): what the project function makes
                return self.makers[qual]
            if qual in self.factories:
                return None  # `model = Unet(1)`: a project function, whatever it returns
            qual = names.candidates(qual)[0]
            # outside the frameworks only a constructor (a Capitalised class) says what it returns
            return qual if self.is_framework_name(qual) or qual.rsplit(".", 1)[-1][:1].isupper() else None
        return None

    def value(self, node: cst.BaseExpression) -> Any:
        option = self.option_read(node)
        if option in self.reassigned_options:
            return UNKNOWN
        if option in self.options:
            return self.options[option][0]
        values = self.local_literals(node.value) if isinstance(node, cst.Name) and self.depth \
            and (self.current_scope, node.value) in self.local_constants else []
        if values:  # shuffle_flag = True earlier in the function (on every branch that binds it)
            return values[0] if all(v == values[0] and type(v) is type(values[0]) for v in values) else UNKNOWN
        return literal(node, self.qualify, self.constants)

    def local_literals(self, name: str) -> list[Any]:
        """The literal values the current function's branches gave ``name`` so far ([] when one
        of them is not a literal)."""
        if len(self.scope) > 1 or (self.current_scope, name) in self.nested_bound:
            return []  # a nested function's own names share the outer function's key
        values = [literal(v, self.qualify, self.constants) for v in self.bound_values(name)]
        return [] if any(v is UNKNOWN or isinstance(v, (Ref, dict)) for v in values) else values

    # ---- command-line options (group command-line-options) -----------------------------------
    def option_read(self, node: cst.BaseExpression) -> Optional[str]:
        """``FLAGS.use_xla``, ``flags.FLAGS.use_xla``, ``args.use_xla``: the option read, by name."""
        if not isinstance(node, cst.Attribute):
            return None
        base = dotted(node.value)
        if base is None:
            return None
        qual = self.qualify(base)
        plain = "." not in base and base not in self.instances and base not in ("self", "cls")
        # opt = Options().parse(): an object of the project's own (what its parser returns)
        made_here = base in OPTION_HOLDERS and base in self.instances and not self.is_framework_name(self.instances[base]) \
            and self.result_of.get(base, "").startswith("parse")
        if (qual is None and plain) or made_here or (qual or base).endswith("FLAGS"):
            return node.attr.value
        # cfg.CUDNN.BENCHMARK: a configuration's path, under a name that holds one (a parameter,
        # or the project's configuration imported: from .config import cfg)
        root, _, rest = base.partition(".")
        if rest and (root in OPTION_HOLDERS or root in self.config_trees.roots) and root not in self.instances:
            written = self.qualify(root)
            if written is None or not self.external(written, root):
                return f"{rest}.{node.attr.value}"
        return None

    def evaluated_option(self, func: cst.BaseExpression) -> Optional[tuple[str, str]]:
        """``eval(opt.model).Model`` -> ("model", "Model"); ``eval(args.net)`` -> ("net", ""):
        a name spelled by an option's value, and the attributes taken of it."""
        rest: list[str] = []
        while isinstance(func, cst.Attribute):
            rest.insert(0, func.attr.value)
            func = func.value
        if not (isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "eval"
                and len(func.args) == 1 and self.qualify("eval") in (None, "builtins.eval")):
            return None
        option = self.option_read(func.args[0].value)
        return (option, ".".join(rest)) if option else None

    def looked_up_option(self, func: cst.BaseExpression) -> Optional[str]:
        """The option that names what ``getattr(m, args.arch)`` or ``m.__dict__[opts.model]``
        looks up, if an option does."""
        if isinstance(func, cst.Call) and len(func.args) >= 2:
            return self.option_read(func.args[1].value)
        if isinstance(func, cst.Subscript) and len(func.slice) == 1 and isinstance(func.slice[0].slice, cst.Index):
            return self.option_read(func.slice[0].slice.value)
        return None

    def _defines_options(self, qual: str) -> Optional[dict[str, Any]]:
        """The knowledge base's spec of a call that defines a command-line option, if it is one."""
        return next((self.kb.matcher(owner, i).defines_option for c in names.candidates(qual)
                     for owner, i in self.kb.index["call"].get(c, ()) if self.kb.matcher(owner, i).defines_option),
                    None)

    def define_option(self, qual: str, node: cst.Call) -> None:
        spec = self._defines_options(qual)
        if spec is None:
            return
        named = argument(node, *spec["name"])
        written = self.value(named) if named is not None else UNKNOWN
        if not isinstance(written, str):
            return
        first = argument(node, "", 0)
        shown = self.value(first) if first is not None else written
        shown = shown if isinstance(shown, str) and shown.startswith("-") else f"--{written}"
        key = written.lstrip("-").replace("-", "_")
        given = argument(node, *spec["default"])
        action = argument(node, "action", None)
        action = self.value(action) if action is not None else None
        implied = (spec.get("action-defaults") or {})
        if given is not None:
            default = self.value(given)
        else:
            default = implied.get(action) if action in implied else None
        how = shown if action in implied else spec["set"].replace("{name}", key).replace("{option}", shown)
        # a positional argument (without nargs "?" or "*") and a required option are always given:
        # their default says nothing of a run
        positional = isinstance(self.value(first) if first is not None else None, str) and \
            not str(self.value(first)).startswith("-") and spec["name"][0] == "dest"
        nargs = argument(node, "nargs", None)
        required = argument(node, "required", None)
        if (positional and (nargs is None or self.value(nargs) not in ("?", "*"))) or \
                (required is not None and self.value(required) is True):
            return
        self.options[key] = (default, shown, how)
        if default is None or isinstance(default, (bool, int, float, str)):
            self.facts.options[key] = default  # read by the programs whose other modules test it

    def set_defaults(self, qual: Optional[str], node: cst.Call) -> None:
        """``parser.set_defaults(model="x")``: those options no longer have their declared defaults."""
        if not qual or not qual.endswith(".set_defaults") or not self._defines_options(qual[:-13] + ".add_argument"):
            return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in self.reassigned_options:
                self.reassigned_options.add(arg.keyword.value)
                self.facts.options_set.append(arg.keyword.value)

    def argument_note(self, node: cst.BaseExpression, cond: Condition, value: Any, holds: bool) -> Optional[str]:
        """What a rule's message says about an argument read from the command line or a variable."""
        option = self.option_read(node)
        wanted = bool_condition(cond)
        if holds and option in self.options:
            default, shown, how = self.options[option]
            if wanted is None:
                return f"{shown} defaults to {default!r}"
            return f"{shown} defaults to {default!r}; run with {how.replace('{value}', str(not wanted))}"
        if not holds and (value is UNKNOWN or isinstance(value, Ref)) and isinstance(node, cst.Name) \
                and not self.bound_values(node.value):
            # tf.train.shuffle_batch(..., num_threads=num_threads) in def f(..., num_threads=16):
            # what the parameter defaults to is what runs unless a caller passes another value (a
            # None default stands for "the caller says"; leading parameters are passed by position)
            known, default, position = self.parameter_default(node.value)
            if known and default is not None and position >= SAFE_POSITION and check(cond, default):
                self.pending_parameters.append(node.value)
                return f"when {node.value} keeps its default {default!r}"
        if holds or wanted is None or (value is not UNKNOWN and not isinstance(value, Ref)):
            return self.parameter_note(node, cond, value, holds)
        computed = self.computed_note(node, cond, value, holds)
        if computed is not None:
            return computed
        name = dotted(node)
        if name is None or (option is None and self.qualify(name) is not None):
            return None  # a module's attribute: not a value the program chooses
        self.note_safe_default(name, cond)
        return f"when {name} is {wanted}"

    def computed_note(self, node: cst.BaseExpression, cond: Condition, value: Any, holds: bool) -> Optional[str]:
        """``shuffle=(mode == "train")``, ``shuffle=not opt.serial_batches``: a boolean the program
        computes. The condition holds for some runs: say for which."""
        wanted = bool_condition(cond)
        if wanted is None:
            return self.parameter_note(node, cond, value, holds)
        if not holds and (value is UNKNOWN or isinstance(value, Ref)) and isinstance(node, cst.Name) and self.depth:
            # `shuffle_flag = True` on one branch, False on others: the runs that take that branch
            if any(check(cond, v) for v in self.local_literals(node.value)):
                return f"when {node.value} is {wanted}"
            bound = self.bound_values(node.value)  # shuffle_flag = (flag == "train")
            if len(bound) == 1 and isinstance(bound[0], (cst.Comparison, cst.UnaryOperation, cst.BooleanOperation)):
                return self.computed_note(bound[0], cond, self.value(bound[0]), holds)
        if holds or wanted is None or value is not UNKNOWN or not isinstance(
                node, (cst.Comparison, cst.UnaryOperation, cst.BooleanOperation)):
            return None
        if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
            return None
        options = [self.option_read(n) for n in _names_and_attributes(node)]
        if any(option in self.options for option in options):
            # an option with a known default: `not args.fast` is what its default makes it
            inner = node.expression if isinstance(node, cst.UnaryOperation) else None
            option = self.option_read(inner) if inner is not None else None
            if option not in self.options:
                # `not opt.not_cuda_benchmark and not opt.test`: what the defaults make it
                truth = default_truth(node, self.option_default)
                return "with the default options" if truth is not None and truth == wanted else None
            if not isinstance(self.options[option][0], bool) or not check(cond, not self.options[option][0]):
                return None
            default, shown, how = self.options[option]  # `not opt` is safe when opt is what is wanted
            return f"{shown} defaults to {default!r}; run with {how.replace('{value}', str(wanted))}"
        text = " ".join(cst.Module([]).code_for_node(node.with_changes(lpar=[], rpar=[])).split())
        if len(text) > 60:
            text = text[:57] + "..."
        return f"when {text} is {wanted}"

    def bound_values(self, name: str) -> list[cst.BaseExpression]:
        """The values the current function (or module) gave the local ``name`` so far."""
        return self.local_values.get((self.current_scope, name), [])

    def parameter_default(self, name: str) -> tuple[bool, Any, int]:
        """The literal default of the enclosing function's parameter ``name``: (known, value, its
        position; keyword-only parameters count as passed by keyword, after SAFE_POSITION)."""
        found = self.enclosing_parameter(name)
        if found is None or found[2].default is None:
            return False, None, 0
        index, keyword_only, param = found
        default = self.value(param.default)
        at = index + SAFE_POSITION if keyword_only else index
        return (default is not UNKNOWN and not isinstance(default, Ref)), default, at

    def note_safe_default(self, name: str, cond: Condition) -> None:
        """``fit(use_multiprocessing=procs)`` in ``def train(..., procs=False)``: a parameter
        whose default is the safe value. If nothing passes it, the default is what runs (see
        FileFacts.safe_defaults); a leading parameter may be passed by position, so it does not count."""
        known, default, at = self.parameter_default(name)
        if known and not check(cond, default) and at >= SAFE_POSITION:
            self.pending_defaults.append(name)

    @property
    def current_scope(self) -> Optional[str]:
        if self.scope:
            return self.scope[0]
        return MAIN_GUARD if self.in_main_guard else None

    def pos(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        return self.spans[node]

    def hit(self, owner: str, index: int, api: str, node: cst.CSTNode, detail: str = "",
            at: Optional[tuple[int, int, int, int]] = None) -> None:
        if owner in NOT_EVIDENCE:
            return  # consulted by runs_its_arguments, held_functions and is_display, not evidence
        matcher = self.kb.matcher(owner, index)
        if matcher.outside_try and self.try_bodies:
            return  # `try: setup_tpu() except ...: pass`: no promise the program runs there
        if matcher.unless_optimises_inputs and isinstance(node, cst.Call) and self.optimises_inputs(node, matcher):
            return  # SGD([image]) and its step(): an image changes, no model
        # outside the methods it is about (a dataset's __getitem__): kept only if one of them
        # calls the function it is in (a helper __getitem__ calls: it runs in the workers too)
        aside = bool(matcher.in_methods) and (self.current_scope or "").rsplit(".", 1)[-1] not in matcher.in_methods
        if aside and self.current_scope in (None, MAIN_GUARD):
            return
        # in a method the loader's workers run (they reseed): kept apart, for the programs that run
        # it themselves (a loader without workers, a direct call)
        methods, importing = matcher.outside_methods
        worker_side = bool(methods) and bool(self.current_scope) and "." in (self.current_scope or "") \
            and (self.current_scope or "").rsplit(".", 1)[-1] in methods \
            and any(qual.split(".")[0] in importing for qual in self.facts.imports.values())
        if self.cpu_blocks and owner.startswith("op:"):
            return  # the ops rules are about GPU kernels; this one is placed on the CPU
        if self.off_default and owner.startswith("rule:") and "defaults to" in detail:
            return  # its problem is an option's default, in a branch that default never takes
        line, col, end_line, end_col = self.pos(node)
        kept_as = self.bound_attribute.get(id(node), "")
        if owner.startswith("op:") and kept_as.startswith("self.") and kept_as.count(".") == 1:
            self.op_attributes[(line, col)] = kept_as[5:]
        functions: list[tuple[Optional[str], Optional[tuple[int, int, int, int]]]] = [(None, None)]
        if matcher.function_arg and isinstance(node, cst.Call):
            fn = self.unwrapped(argument(node, matcher.function_arg.get("name", ""), matcher.function_arg.get("pos")))
            # a group's stage may be given either of two functions: `f if quad else g`
            choices = [fn.body, fn.orelse] if isinstance(fn, cst.IfExp) and owner.startswith("group:") else [fn]
            if owner == "group:pipeline-stages":
                self.note_stage_parameter(fn)
            functions = [f for f in (self.passed_function(choice) for choice in choices) if f != (None, None)]
            if not functions:
                return
        for arg_ref, arg_span in functions:
            self.facts.hits.append(Hit(owner, index, api, line, col, end_line, end_col, self.current_scope, detail,
                                       arg_ref, arg_span, self.version_guards > 0, at,
                                       bool(self.display_calls) or self.formatted > 0 or self._draws_a_seed(node),
                                       self.off_default > 0, worker_side, all_of(self.pending_needs)))
            held = self.bound_to.get(id(node)) if owner.startswith("group:") and self.current_scope not in (
                None, MAIN_GUARD) else None  # a module-level name may be read where it is imported
            if held is not None:  # uid = random.randint(...): is it only ever printed?
                self.shown_values.note_bound(held, self.facts.hits[-1])
            if aside:
                self.aside_hits[id(self.facts.hits[-1])] = matcher.in_methods
        for param in self.pending_defaults:
            self.facts.safe_defaults.append((line, col, param))
        self.pending_defaults = []
        for param in self.pending_parameters:
            self.default_judged[id(self.facts.hits[-1])] = param
        self.pending_parameters = []
        self.pending_needs = []
        if owner.startswith("op:") and self.no_grad and self.kb.ops[owner[3:]].phase == "backprop":
            self.facts.off_gradient.append((line, col))  # built or run where no gradient is taken
        if isinstance(node, cst.Call) and owner.startswith("op:") and self.kb.ops[owner[3:]].phase == "backprop":
            self.sink_ops.setdefault(self.current_scope, {})[id(node)] = (line, col)
            if self.top_function is not None and not self.tapes and not self.lambdas and \
                    self.depth == self.top_depth and not api.rsplit(".", 1)[-1][:1].isupper():
                self.untaped.setdefault(self.scope[0], []).append((line, col))  # not a layer it makes

    def _kept_in_branch(self, name: str, value: cst.BaseExpression) -> bool:
        """Does a library's result bound to ``name`` inside a branch leave the project object it
        held as what later calls reach? (``agent = checkpoints.restore_checkpoint(path, agent)``
        in the ``else`` of a resume test: either may be ``agent`` after the ``if``.)"""
        # frozen_models.conditions counts the if/else branches the statement is in
        if not self.frozen_models.conditions or name not in self.made_by or not isinstance(value, cst.Call):
            return False
        callee = dotted(value.func)
        return bool(callee) and self.external(self.qualify(callee), callee)

    def object_calls(self, name: Optional[str]) -> list[str]:
        """What a call runs when it calls an object of a project class or one of its methods:
        ``model(x)`` with ``model = Detector()`` (its ``__call__``, or the ``forward``/``call`` the
        framework's ``__call__`` runs), ``self.head.loss(x)`` with ``self.head = Head()`` set in
        another method of the class."""
        parts = name.split(".") if name else []
        made = None
        if len(parts) == 1 and parts[0] in self.made_by:
            made = self.made_by[parts[0]]
        elif len(parts) == 2 and self.made_by.get(parts[0], "").endswith(TABLE_ITEM):
            made = self.made_by[parts[0]]  # trainer.train(): trainer made by a class a table holds
        elif len(parts) in (2, 3) and parts[0] == "self" and self.current_scope and "." in self.current_scope:
            made = self.attribute_made.get((self.current_scope.split(".")[0], parts[1]))
            parts = parts[1:]
        if not made or not (made.rsplit(".", 1)[-1][:1].isupper() or made.endswith(TABLE_ITEM)):
            return []
        return [f"{made}.{parts[1]}"] if len(parts) == 2 else [f"{made}.{m}" for m in ("__call__", "forward", "call")]

    def passed_function(self, fn: Optional[cst.BaseExpression]
                     ) -> tuple[Optional[str], Optional[tuple[int, int, int, int]]]:
        """(name, None) of a function given by name, (None, span) of a lambda or nested def."""
        if isinstance(fn, cst.Lambda):
            return None, self.pos(fn)
        if fn is None:
            return None, None
        ref = dotted(fn)
        span = self.nested_defs.get(ref or "")
        return (None, span) if span else (ref, None)

    def unwrapped(self, fn: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        """``functools.partial(parse, size=8)`` runs ``parse``: the function a wrapper is given."""
        while isinstance(fn, cst.Call) and fn.args and self._in_group(WRAPPERS, self.qualify(dotted(fn.func)), fn):
            fn = fn.args[0].value
        return fn

    def pointed(self, call: cst.Call, matcher: Any, method: bool) -> Optional[tuple[int, int, int, int]]:
        """Where a call's finding points: the argument that made the match, else (for a method)
        the method's name through the end of the call; None for the call's own start."""
        arg = matched_argument(call, matcher.kwargs) if matcher.kwargs else None
        if arg is not None:
            start = self.pos(arg.keyword if arg.keyword is not None else arg.value)
            end = self.pos(arg.value)
            return start[0], start[1], end[2], end[3]
        if method and isinstance(call.func, cst.Attribute):
            start, end = self.pos(call.func.attr), self.pos(call)
            return start[0], start[1], end[2], end[3]
        return None

    # ---- imports -----------------------------------------------------------------------------
    def _note_module(self, module: str, node: cst.CSTNode) -> None:
        self.facts.import_lines.setdefault(module, self.pos(node)[0])
        top = module.split(".")[0]
        for prefix in self.framework_imports:
            if names.within(module, prefix):
                self.facts.frameworks.add(top)
                if "*" in prefix:  # some classes of a package another framework owns: the gate's key
                    self.facts.frameworks.add(prefix)
        for prefix, flavour in KERAS_FLAVOURS.items():
            if module == prefix or module.startswith(prefix + "."):
                self.facts.keras_flavours.add(flavour)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = module
            else:
                head = module.split(".")[0]
                self.aliases[head] = head
            self._note_module(module, node)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.facts.imports[alias.asname.name.value] = module
            else:
                self.facts.imports[module.split(".")[0]] = module.split(".")[0]

    def import_by_name(self, name: str, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        """``MODEL = importlib.import_module(FLAGS.model)``: the module the name (a literal, or the
        option's default) says is what a run with the defaults imports, as ``import x as MODEL``."""
        if not (isinstance(value, cst.Call) and value.args and self._in_group(
                MODULE_IMPORTERS, self.qualify(dotted(value.func)), value)):
            return
        arg = value.args[0].value
        module = self.value(arg) if isinstance(arg, cst.SimpleString) else None
        if module is None:
            known, default = self.option_default(arg)
            module = default if known else None
        if isinstance(module, str) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", module):
            self.aliases[name] = module
            self._note_module(module, node)
            self.facts.imports[name] = module

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module) if node.module is not None else ""
        level = len(node.relative)
        line = self.pos(node)[0]
        if level:
            self.facts.relative_imports.append((level, module or "", line))
            base = "." * level + (module or "")
        else:
            base = module or ""
            self._note_module(base, node)
        if isinstance(node.names, cst.ImportStar):
            self.facts.star_imports.append(base)
            if not level:
                self.star_modules.append(base)
            self._star_links(base, node)
            return
        for alias in node.names:
            name = dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            qual = names.member(base, name)
            self.aliases[local] = qual
            self.facts.imports[local] = qual
            if not level:
                self._note_module(qual, node)
            self._note_link(qual, node)

    def _star_links(self, base: str, node: cst.CSTNode) -> None:
        """``from ops import *`` of a project module: its names (``tf``, ``conv``) become this file's."""
        prefix = names.member(base, "")
        for key in [*self.links, *self.framework_classes, *self.factories, *self.makers]:
            name = key[len(prefix):] if key.startswith(prefix) else ""
            if name and "." not in name:
                self.aliases[name] = key
                self._note_link(key, node)
            elif name == "*":  # the module's own star imports of frameworks
                self.star_modules.extend(self.links[key].split())

    def _note_link(self, qual: str, node: cst.CSTNode) -> None:
        """A framework reached through a project module counts as imported here."""
        target = self.links.get(qual)
        if target is not None and target != qual and not target.startswith("."):
            self._note_module(target, node)

    # ---- scopes ------------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self.suites.append((node.body, True))
        self._note_docstring(node)
        self.module_node = node

    def _note_docstring(self, node: "cst.Module | cst.ClassDef | cst.FunctionDef") -> None:
        """A docstring names no definition (for ``unreferenced``), as a comment does not."""
        doc = node.get_docstring(clean=False)
        if doc:
            self.comments.append(doc)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.suites.append((node.body, id(node) in self.def_bodies))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.suites.pop()

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.suites.append((node.body, id(node) in self.def_bodies))

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self.suites.pop()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keywords.add(node.keyword.value)

    def visit_Comment(self, node: cst.Comment) -> None:
        self.comments.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.def_bodies.add(id(node.body))
        self._note_docstring(node)
        for decorator in node.decorators:  # `@eqx.filter_value_and_grad`: the call, without arguments
            if isinstance(decorator.decorator, (cst.Name, cst.Attribute)):
                self.match_bare_decorator(decorator.decorator)
        self.no_grad += sum(1 for d in node.decorators if self.stops_autograd(d.decorator))
        if self.depth == 0 and not node.decorators and not self.in_main_guard:
            self.plain_functions.append(node.name.value)
        if self.depth == 0:
            self.note_registered(node.name.value, node.decorators)
            self.frozen_models.note_def(node)
        if self.depth == 0 or (self.depth == 1 and self.classes and not self.scope):
            name = f"{self.classes[-1]}.{node.name.value}" if self.classes and self.depth == 1 else node.name.value
            self.scope.append(name)
            self.top_function = node
            self.loop_bound = None  # read when a test of a parameter asks (tested_param)
            self.nested_defs = {}
            self.stopped_names, self.returns, self.top_depth = set(), [], self.depth + 1
            self.calls_start = len(self.facts.calls)
            self.top_no_grad = self.no_grad
            written = [dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                       for d in node.decorators if not self.stops_autograd(d.decorator)]
            if any(written):  # project decorators may stop autograd too (gradients.py)
                self.facts.decorators[name] = [w.rsplit(".", 1)[-1] for w in written if w]
            self.facts.functions.setdefault(name, self.pos(node)[0])
            self.note_params(name, node, bool(self.classes and self.depth == 1))
            if self.classes and self.depth == 1:
                self.facts.classes.setdefault(self.classes[-1], []).append(node.name.value)
                if _abstract(node):
                    self.facts.abstract.append(name)
        else:
            self.scope.append(self.scope[-1] if self.scope else node.name.value)
            if self.top_function is not None:  # def parse(...) inside a function: passed on by name
                self.nested_defs[node.name.value] = self.pos(node)
        self.depth += 1
        params = node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            self.flow.parameter(self.flow_keys(param.name.value)[0])  # shadows a module-level name
        if self.depth == 2 and self.classes and node.name.value == "__init__":  # (self, a, b, *, c)
            positional = [p.name.value for p in [*params.posonly_params, *params.params]][1:]
            self.init_params[f"{self.classes[-1]}.__init__"] = {
                **{name: str(i) for i, name in enumerate(positional)},
                **{p.name.value: "" for p in params.kwonly_params}}

    def note_registered(self, name: str, decorators: Sequence[cst.Decorator]) -> None:
        """``@registry.register_model(name="cnn") class SmallCNN``: what a project decorator is
        given, which it may keep in a table (a registry) that a lookup by name reads later."""
        for decorator in decorators:
            node = decorator.decorator
            written = dotted(node.func if isinstance(node, cst.Call) else node)
            if written and self.project_ref(written):
                held = self.facts.registered.setdefault(self.qualify(written) or written, [])
                if name not in held:
                    held.append(name)

    def match_bare_decorator(self, node: cst.BaseExpression) -> None:
        """A decorator written without parentheses is that call with the function as its only
        argument: call matchers that ask nothing of the arguments match it."""
        written = dotted(node) or ""
        qual = self.qualify(written)
        if qual:
            self.match_names("call", qual, node, written=written, bare=True)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.no_grad -= sum(1 for d in original_node.decorators if self.stops_autograd(d.decorator))
        self.depth -= 1
        scope = self.scope.pop()
        if original_node is self.top_function:
            self.top_function = None
            if self.returns and all(self.returns):
                self.facts.stopped.append(scope)
            self.judge_sinks([scope], original_node.body.body, module=False)
            kinds = self.return_kinds.get(scope, [])
            if kinds and kinds[0] is not None and all(kind == kinds[0] for kind in kinds) \
                    and kinds[0] in self.kb.method_classes():
                self.facts.made_types[scope] = kinds[0]  # every return makes one such framework class
            if self.tape_facts.get(scope, set()) == {"tape", "applies"}:
                self.facts.off_gradient.extend(self.untaped.get(scope, ()))

    def note_tape_step(self, qual: Optional[str], node: cst.Call, start: int) -> None:
        """What says whether the function being walked is a tape step (see untaped), whether it
        makes objects or trains (builders), and whether the file is eager tape code."""
        written = dotted(node.func)
        last = written.rsplit(".", 1)[-1] if written else ""
        new_hits = self.facts.hits[start:]
        other_gradients = any(h.owner == GRADIENT_TARGETS for h in new_hits) and not (
            isinstance(node.func, cst.Attribute) and node.func.attr.value == "gradient")
        if other_gradients:
            self.file_flags.add("other gradients")  # minimize, compute_gradients, tf.gradients
        if self.top_function is None:
            if last in SYMBOLIC_MAKERS:  # as written: `inputs(x)` is not one
                self.file_flags.add("module model")
            return
        scope = self.scope[0]
        flags = self.tape_facts.setdefault(scope, set())
        if other_gradients:
            flags.add("other gradients")
        if last in MODEL_MAKERS:
            flags.add("builds a model")
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "apply_gradients":
            flags.add("applies")  # a training step: no outer tape records it
        if (last[:1].isupper() and not self._in_group(VALUE_MAKERS, qual, node)) \
                or any(h.owner == "group:training" for h in new_hits):
            self.builders.add(scope)  # Dense(...), Generator(), model.fit(...)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "data":  # x.data: a detached view (gradient_sinks.py)
            self.stopping_scopes.add(self.current_scope)
        if isinstance(node.value, cst.Call):  # vgg16(...).features: visited before the call itself
            self.read_attribute[id(node.value)] = node.attr.value
        if self.top_function is None and node.attr.value in ("output", "outputs", "input", "inputs"):
            self.file_flags.add("module model")  # model.output: a functional model built here

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.lambdas += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.lambdas -= 1

    def leave_With(self, original_node: cst.With) -> None:
        self.cpu_blocks -= sum(1 for item in original_node.items if self.on_cpu(item.item))
        self.tapes -= sum(1 for item in original_node.items if self.is_tape(item.item))
        self.no_grad -= sum(1 for item in original_node.items if self.stops_autograd(item.item))

    def opened_scope(self, node: cst.BaseExpression) -> Optional[str]:
        """The scope group whose block ``node`` opens (``tf.Graph().as_default()``, ``g.as_default()``
        with ``g = tf.Graph()``), if any."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            return None
        receiver, method = node.func.value, node.func.attr.value
        for group in self.kb.groups.values():
            if method not in group.opens_with:
                continue
            if isinstance(receiver, cst.Call) and self.group_matchers(f"group:{group.name}", receiver):
                return group.name
            kind = self.type_of(receiver) if isinstance(receiver, cst.Name) else None
            if kind and any(owner == f"group:{group.name}" for c in names.candidates(kind)
                            for owner, _ in self.kb.index["call"].get(c, ())):
                return group.name
        return None

    def on_cpu(self, node: cst.BaseExpression) -> bool:
        """``tf.device("/cpu:0")``: what is built inside runs on the CPU, never a GPU kernel."""
        return isinstance(node, cst.Call) and bool(self.group_matchers(CPU_BLOCKS, node))

    def stops_autograd(self, node: cst.BaseExpression) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``, and
        as a decorator without the call: ``@torch.no_grad``."""
        if isinstance(node, cst.Call):
            return bool(self.group_matchers(NO_GRAD_BLOCKS, node))
        name = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        qual = self.qualify(name) if name else None
        return bool(qual) and any(owner == NO_GRAD_BLOCKS for c in names.candidates(qual)
                                  for owner, _ in self.kb.index["call"].get(c, ()))

    def is_tape(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and self._in_group(TAPES, self.qualify(dotted(node.func)), node)

    # ---- values no gradient reaches (gradient_sinks.py) ---------------------------------------
    def judge_sinks(self, scopes: list[Optional[str]], statements: Any, module: bool) -> None:
        ops = {k: v for scope in scopes for k, v in self.sink_ops.pop(scope, {}).items()}
        spots = {k: v for scope in scopes for k, v in self.call_spots.pop(scope, {}).items()}
        sites = self.facts.calls[0 if module else self.calls_start:]
        results: dict[int, tuple[int, int, int]] = {}
        if sites and not self.stopping_scopes.isdisjoint(scopes):  # project calls' results followed too
            kept = {(site.line, site.col) for site in sites}
            results = {k: v for k, v in spots.items() if v[:2] in kept}
        if ops:  # ops applied to a data batch alone (data_batches.py)
            self.facts.off_gradient.extend(sorted(batch_only_ops(
                statements, ops, lambda call: loader_constructor(self.qualify(dotted(call.func)), dotted(call.func)),
                lambda call: self._in_group(DATA_SOURCES, self.qualify(dotted(call.func)), call),
                lambda call: self._in_group(WEIGHT_MAKERS, self.qualify(dotted(call.func)), call),
                lambda call: self.named_args(DIFFERENTIATED, call))))
        if not (ops or results) or any(scope in self.paths.blocks and self.paths.blocks[scope].opaque
                                       for scope in scopes):
            return  # a block whose loss comes from a collection takes gradients its names do not show
        roles = CallRoles(stops=self.passes_no_gradient, gradient_args=self.gradient_args,
                          escapes=self.may_keep)
        dead, dropped = dead_ops(statements, ops, roles, module, importable=not self.facts.path.endswith(".ipynb"),
                                 results=results)
        self.facts.off_gradient.extend(sorted(dead))  # type: ignore[arg-type]
        if dropped:
            first = 0 if module else self.calls_start
            for i, site in enumerate(sites, first):
                # the call's own callee only: a function handed to it (train(net, loss_fn)) runs
                # there, and what it computes may train whatever the call returns
                if (site.line, site.col, 1) in dropped and not site.deferred \
                        and site.target.rsplit(".", 1)[-1] == self.callee_at.get((site.line, site.col)):
                    self.facts.calls[i] = replace(site, dropped=True)

    def group_matchers(self, group: str, node: cst.Call) -> list[Any]:
        """The matchers of ``group`` that ``node`` satisfies, argument conditions included."""
        name = dotted(node.func)
        qual = self.qualify(name)
        if qual is None and name in BUILTIN_NAMES and name not in self.facts.functions:
            qual = f"builtins.{name}"
        entries: list[tuple[str, int]] = []
        for candidate in names.candidates(qual) if qual else ():
            entries = [e for e in self.kb.index["call"].get(candidate, ()) if e[0] == group]
            if entries:
                break
        if not entries and isinstance(node.func, cst.Attribute):
            entries = [e for e in self.kb.index["method"].get(node.func.attr.value, ()) if e[0] == group]
        out = []
        for owner, i in entries:
            matcher = self.kb.matcher(owner, i)
            if not matcher.kwargs or check_kwargs(node, matcher.kwargs, self.value, self.qualify) is not None:
                out.append(matcher)
        return out

    def passes_no_gradient(self, node: cst.Call) -> bool:
        name = dotted(node.func)
        return self.is_stop(node) or self.is_display(self.qualify(name), name, node) or \
            bool(self.group_matchers(NO_GRADIENT, node))

    def gradient_args(self, node: cst.Call) -> Optional[list[cst.BaseExpression]]:
        return self.named_args(INDEX_TAKING, node)

    def named_args(self, group: str, node: cst.Call) -> Optional[list[cst.BaseExpression]]:
        """The arguments ``group``'s matchers of ``node`` name in ``gradient-args`` (None: no match)."""
        matchers = self.group_matchers(group, node)
        if not matchers:
            return None
        found = (argument(node, name, pos) for m in matchers for name, pos in m.gradient_args.items())
        return [arg for arg in found if arg is not None]

    def may_keep(self, node: cst.Call) -> bool:
        """Project code (it may train or store what it gets), a gradient target or a loss
        collection: what such a call is given leaves the function."""
        name = dotted(node.func)
        qual = self.qualify(name)
        if name is None or not self.external(qual, name):
            return True
        return self._in_group(GRADIENT_TARGETS, qual, node) or self._in_group(LOSS_COLLECTIONS, qual, node)

    def visit_Return(self, node: cst.Return) -> None:
        if self.top_function is not None and self.scope and self.scope[-1] not in self.facts.no_grad_decorators \
                and self._returns_without_autograd(node.value):
            self.facts.no_grad_decorators.append(self.scope[-1])
        if self.top_function is not None and self.depth == self.top_depth:
            self.returns.append(node.value is not None and training_branches.returns_stopped(
                node.value, self.stopped_names, self.is_stop))
        if self.top_function is not None and self.depth == self.top_depth and self.current_scope is not None:
            kind = self.type_of(node.value) if node.value is not None else None
            self.return_kinds.setdefault(self.current_scope, []).append(
                kind if kind and kind != LOCAL_FRAMEWORK and self.is_framework_name(kind) else None)
        if self.current_scope is not None:  # return model_creator: a factory of project code
            refs = self.project_functions(node.value)
            table = self.table_read(node.value)
            if table is not None:  # return _MODELS[name]: one of what the table holds
                refs.append(table)
            if refs:
                returned = self.facts.returns.setdefault(self.current_scope, [])
                returned.extend(ref for ref in refs if ref not in returned)

    def table_read(self, node: Optional[cst.BaseExpression]) -> Optional[str]:
        """The module-level table an expression reads an item of (``_MODELS[name]``,
        ``_MODELS.get(name)``), if any."""
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
            node = node.func.value
        else:
            return None
        return node.value if isinstance(node, cst.Name) and node.value in self.facts.tables else None

    def _returns_without_autograd(self, value: Optional[cst.BaseExpression]) -> bool:
        """A decorator (factory) that runs what it wraps without autograd: it returns a call made
        in a no-grad block (``with torch.no_grad(): return fn(*args)``), or returns a no-grad
        mode applied to it (``return (torch.inference_mode if new else torch.no_grad)()(fn)``)."""
        if value is None:
            return False
        if self.no_grad > self.top_no_grad and isinstance(value, cst.Call):
            return True
        return any(self.stops_autograd(n) for n in _names_and_attributes(value))

    def is_stop(self, node: cst.Call) -> bool:
        return self._in_group(STOPS, self.qualify(dotted(node.func)), node)

    # an inference branch: the body of `if not training:`, the else of `if training:`
    def _inference_branch(self, node: cst.If, test_holds: bool, step: int) -> None:
        if training_branches.training_test(node.test) is (not test_holds):
            self.inference_branches += step

    # the arms of if/elif/else ladders being walked: (the ladder's first If, the arm's node)
    def visit_If_body(self, node: cst.If) -> None:
        self.arms.append((self.ladders.get(id(node), id(node)), id(node)))
        self._inference_branch(node, True, 1)
        truth = self._default_truth(node)
        off = truth is False
        self.off_default += off
        if off:
            self.facts.off_default_spans.append(self.pos(node.body))
        if truth is None:  # `if opt.model == "resnet":` with --model defined in another module
            # bindings as the chain's first test saw them (an elif's rest in the If of its orelse)
            start = self.chain_starts.pop(id(node), None)
            if start is None and self.top_function is not None:
                params = self.top_function.params
                start = {p.name.value: len(self.bound_values(p.name.value))
                         for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
            if isinstance(node.orelse, cst.If) and start is not None:
                self.chain_starts[id(node.orelse)] = start
            self.chain_bindings = start or {}
            form = test_form(node.test, self.option_default, self.options_elsewhere, self.tested_param)
            self.chain_bindings = {}
            if form is not None and (form_options(form) - set(self.options) or form_params(form)):
                orelse = self.pos(node.orelse) if node.orelse is not None else None
                self.facts.option_tests.append([form, self.pos(node.body), orelse, self._after_exit(node)])

    def option_condition(self, value: cst.BaseExpression, cond: Condition, stmt: cst.CSTNode) -> Optional[str]:
        """``cudnn.benchmark = cfg.CUDNN.BENCHMARK``: a setting that holds where an option or a
        configuration value another module defines is what the rule asks for. Kept as a test of
        that value around the statement, decided per program (FileFacts.option_tests)."""
        wanted = bool_condition(cond)
        key = self.options_elsewhere(value) if isinstance(value, cst.Attribute) else None
        if wanted is None or key is None or key in self.options:
            return None
        form: Any = ["opt", key] if wanted else ["not", ["opt", key]]
        self.facts.option_tests.append([form, self.pos(stmt), None, None])
        text = " ".join(cst.Module([]).code_for_node(value).split())
        return f"when {text[:57] + '...' if len(text) > 60 else text} is {wanted}"

    def note_config_tree(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """A defaults module's configuration tree (flow/config_trees.py)."""
        trees = self.config_trees
        if isinstance(target, cst.Name):
            maker = dotted(value.func) if isinstance(value, cst.Call) and not value.args else None
            qual = self.qualify(maker) if maker else None
            library = self.library_bases.get(maker or "")
            if maker and (self._in_group(CONFIG_TREES, library or qual, value)
                          or (not self.external(qual, maker) and maker[:1].isupper())):
                trees.note_root(target.value)  # _C = CN(), config = ConfigNode() (a project subclass)
            else:
                trees.note_alias(target.value, value)
        elif trees.roots and isinstance(target, cst.Attribute):
            known = literal(value, self.qualify, self.constants)
            if known is not UNKNOWN:
                trees.note_default(target, known)

    # ---- what a call passes to a project function's parameters (decided per program) ----------
    def options_elsewhere(self, node: cst.BaseExpression) -> Optional[str]:
        """An option read as a program decides it: one this file defines, or a read through a
        name that holds the parsed options or a configuration (``args.arch``, ``opt.netG``,
        ``cfg.manual_seed``), not any object's attribute (``spec.type`` in a loop)."""
        key = self.option_read(node)
        if key is None or key in self.options:
            return key
        base = dotted(node.value) if isinstance(node, cst.Attribute) else None
        root = (base or "").split(".")[0]
        return key if base in OPTION_HOLDERS or ("." in (base or "") and (
            root in OPTION_HOLDERS or root in self.config_trees.roots)) else None

    def tested_param(self, node: cst.BaseExpression) -> Optional[str]:
        """The function being walked, when ``node`` names one of its parameters that nothing in
        it has rebound (``if padding_type == "reflect":``); its value is the caller's argument."""
        if not isinstance(node, cst.Name) or self.current_scope is None or self.top_function is None:
            return None
        if self.parameter_position(node.value) is None:
            return None
        if self.loop_bound is None:  # one walk of the function, only where a parameter is tested
            self.loop_bound = _stored(self.top_function.body, assignments=False, others=True)
        if node.value in self.loop_bound:
            return None
        # `if netG == "global": netG = Global() elif netG == "local": ...`: the elif's test reads
        # the parameter as given (only an earlier branch of the same chain rebound it)
        before = self.chain_bindings.get(node.value)
        if (before if before is not None else len(self.bound_values(node.value))) > 0:
            return None
        return self.current_scope

    def note_params(self, scope: str, node: cst.FunctionDef, method: bool) -> None:
        """A function's parameters: [name, position (-1 keyword-only; a method's self not
        counted), its default as a form or None]."""
        params = node.params
        positional = [*params.posonly_params, *params.params]
        if method and positional and positional[0].name.value in ("self", "cls"):
            positional = positional[1:]
        rows = [[p.name.value, i, p] for i, p in enumerate(positional)]
        rows += [[p.name.value, -1, p] for p in params.kwonly_params]
        out = []
        for name, position, param in rows:
            if param.default is not None:
                self.facts.default_spans.append([*self.pos(param.default), scope, name, position])
            default = self.value(param.default) if param.default is not None else UNKNOWN
            out.append([name, position, ["lit", default] if plain_value(default) else None])
        if out:
            self.facts.params[scope] = out

    def note_call_args(self, node: cst.Call, line: int, col: int) -> None:
        """The arguments of a call that may run project code, as forms (literals, command-line
        options, the caller's parameters); a starred argument makes the rest unknown."""
        rows: list[list[Any]] = []
        position = 0
        for arg in node.args:
            if arg.star:
                rows.append(["*", -1, None])
                position = -1  # f(*first, "x"): where the rest lands is not known
                continue
            keyword = arg.keyword.value if arg.keyword is not None else ""
            form = test_form(arg.value, self.option_default, self.options_elsewhere, self.tested_param)
            rows.append([keyword, -1 if keyword or position < 0 else position,
                         form if form and form[0] in ("lit", "opt", "param") else None])
            position += 0 if keyword or position < 0 else 1
        # every call is kept, an unread argument too: a call without an entry decides nothing
        self.facts.call_args[f"{line}:{col}"] = rows

    def note_config_files(self, node: cst.Call) -> None:
        """A .yaml/.yml name a call is given (a literal, or an option's default): a
        configuration the program loads (programs/config_files.py)."""
        for arg in node.args:
            value = self.value(arg.value)
            if isinstance(value, str) and value.endswith((".yaml", ".yml")) and len(value) < 300 \
                    and "\n" not in value and value not in self.facts.config_files:
                self.facts.config_files.append(value)

    def _after_exit(self, node: cst.If) -> Optional[tuple[int, int, int, int]]:
        """What follows ``if test: ... return`` in its block: it runs only when the test is false."""
        suite = self.suites[-1][0] if self.suites else ()
        index = next((i for i, stmt in enumerate(suite) if stmt is node), None)
        last = node.body.body[-1] if isinstance(node.body, cst.IndentedBlock) and node.body.body else None
        exits = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise))
        if index is None or index + 1 >= len(suite) or not exits:
            return None
        return self.pos(suite[index + 1])[:2] + self.pos(suite[-1])[2:]

    def leave_If_body(self, node: cst.If) -> None:
        self.arms.pop()
        self._inference_branch(node, True, -1)
        self.off_default -= self._default_truth(node) is False

    def visit_If_orelse(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self.ladders[id(node.orelse)] = self.ladders.get(id(node), id(node))
        elif node.orelse is not None:
            self.arms.append((self.ladders.get(id(node), id(node)), id(node.orelse)))
        self._inference_branch(node, False, 1)
        off = self._default_truth(node) is True
        self.off_default += off
        if off and node.orelse is not None:
            self.facts.off_default_spans.append(self.pos(node.orelse))

    def leave_If_orelse(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.Else):
            self.arms.pop()
        self._inference_branch(node, False, -1)
        self.off_default -= self._default_truth(node) is True

    def _default_truth(self, node: cst.If) -> Optional[bool]:
        """The test's value with every command-line option at its default and a name of the
        function at the literal it was last bound to (None: unknown)."""
        return default_truth(node.test, self.option_default)

    def option_default(self, expr: cst.BaseExpression) -> tuple[bool, Any]:
        """(known, value) of what ``expr`` reads in a run with the default options."""
        option = self.option_read(expr)
        if option in self.options:
            return True, self.options[option][0]
        # random_seed = 0 earlier in the same function: `if random_seed:` is never taken
        if not isinstance(expr, cst.Name):
            return False, None
        bound = self.bound_values(expr.value)
        if len(bound) == 1 and self.option_read(bound[0]) in self.options:
            return True, self.options[self.option_read(bound[0])][0]  # seed = args.seed; `if seed < 0:`
        if self.depth == 0:  # a script's or notebook's own top level
            return (True, self.constants[expr.value]) if expr.value in self.constants else (False, None)
        key = (self.current_scope, expr.value)
        return (True, self.local_constants[key]) if key in self.local_constants else (False, None)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.def_bodies.add(id(node.body))
        self._note_docstring(node)
        written = [dotted(arg.value) for arg in node.bases]
        bases = [self.qualify(name) for name in written]
        self.local_classes[node.name.value] = any(b and (self.is_framework_name(b) or b in self.framework_classes)
                                                  for b in bases) or any(self.local_classes.get(w or "") for w in written)
        self.bases.append([w for w in written if w])
        # class ModifiedTrainer(Trainer): its objects are the library class's, with what the
        # knowledge base says that class does (it seeds when made, it trains)
        library = [b for w, b in zip(written, bases) if w and b and self.external(b, w)
                   and any(owner != HOOKS for c in names.candidates(b) for owner, _ in self.kb.index["call"].get(c, ()))]
        if library and self.depth == 0:
            self.library_bases[node.name.value] = library[0]
        if self.depth == 0:
            self.classes.append(node.name.value)
            self.facts.classes.setdefault(node.name.value, [])
            # a library's base by its qualified name, a project's by its last
            self.facts.class_bases[node.name.value] = [
                b if w and b and self.external(b, w) else (w or "?").rsplit(".", 1)[-1] for w, b in zip(written, bases)]
            project = [self.qualify(w) or w for w, b in zip(written, bases) if w and not self.external(b, w)]
            if project:
                self.facts.bases[node.name.value] = project
            if not node.decorators and not self.in_main_guard:
                self.plain_classes.append(node.name.value)
            self.note_registered(node.name.value, node.decorators)
        else:
            self.classes.append(f"{self.classes[-1] if self.classes else ''}.{node.name.value}")
        self.depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.depth -= 1
        self.classes.pop()
        self.bases.pop()

    def visit_If(self, node: cst.If) -> None:
        if not (self.depth == 0 and _is_main_guard(node.test)):
            self.frozen_models.conditions += 1
            self.if_depth += 1
        if self.depth == 0 and not self.in_main_guard and _is_main_guard(node.test):
            self.facts.main_guard = self.facts.main_guard or self.pos(node)[0]
            self.in_main_guard = True
            self._guard_node = node
        if _mentions_version(node.test):
            self.version_guards += 1
        if self.top_function is not None:
            self.branches.note_if(self.top_function, node, lambda n: (self.pos(n)[0], self.pos(n)[2]))
        test = node.test
        if self.classes and self.current_scope and "." in self.current_scope and isinstance(test, cst.Attribute) \
                and isinstance(test.value, cst.Name) and test.value.value == "self":
            # `if self.random_split:` in a method: off when every construction leaves the flag at
            # a false default (programs/unused.py)
            self.facts.flag_tests.append([*self.pos(node.body), self.current_scope.split(".")[0], test.attr.value])

    def _other_arm_keeps(self, name: str, value: cst.BaseExpression) -> bool:
        """Does an object of a known class bound to ``name`` in one arm of an if/elif ladder stay
        what later calls reach, when another arm binds something detlint cannot type?
        (``trainer = Trainer(...)`` / ``elif ...: trainer = qgan_trainer(...)``, a name defined
        nowhere: ``trainer.train()`` after the ladder may run ``Trainer.train``.)"""
        before, here = self.bound_arm.get(name), self.arms[-1] if self.arms else None
        if not (before is not None and here is not None and before[0] == here[0] and before[1] != here[1]
                and name in self.instances and isinstance(value, cst.Call) and self.type_of(value) is None):
            return False
        # only a plain name the file neither defines nor imports: a registry's or a table's
        # object (REGISTRY.lookup(k)(cfg), TABLE[k](cfg)) is followed as such, not dropped
        callee = value.func.value if isinstance(value.func, cst.Name) else None
        return bool(callee) and self.qualify(callee) is None and callee not in self.local_classes \
            and (self.current_scope, callee) not in self.table_held and not self.held_functions(value)

    def leave_If(self, original_node: cst.If) -> None:
        if not (self.depth == 0 and _is_main_guard(original_node.test)):
            self.frozen_models.conditions -= 1
            self.if_depth -= 1
        if self.in_main_guard and original_node is getattr(self, "_guard_node", None):
            self.in_main_guard = False
        if _mentions_version(original_node.test):
            self.version_guards -= 1

    # ---- assignments -------------------------------------------------------------------------
    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if augmented_step(node):  # w -= lr * w.grad
            self.match_names("shape", GRADIENT_STEP, node)
        if isinstance(node.target, cst.Name):
            self.local_constants.pop((self.current_scope, node.target.value), None)
            self.paths.bind(self.current_scope, [node.target.value], node.value, self.pos(node), [node.target.value])

    def _draws_a_seed(self, node: cst.CSTNode) -> bool:
        """A function's draw inside ``seed = ...`` (random.randint, not a SeedGenerator made)."""
        if not self.seed_values or not isinstance(node, cst.Call):
            return False
        name = dotted(node.func) or ""
        return not name.rsplit(".", 1)[-1][:1].isupper()

    def visit_Try_body(self, node: cst.Try) -> None:
        self.try_bodies += 1

    def leave_Try_body(self, node: cst.Try) -> None:
        self.try_bodies -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        # args.manualSeed = random.randint(1, 10000): the seeds it feeds are reported (DET611,
        # DET106, seeded from a value that changes every run), not the draw that makes it
        self.seed_values += _names_a_seed(node.targets)
        if len(node.targets) == 1:
            self.frozen_models.note_bind(node.targets[0].target, self.pos(node)[0], node.value)
            if assigned_step(node.targets[0].target, node.value):  # theta = theta - lr * grads
                self.match_names("shape", GRADIENT_STEP, node)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Attribute):
            self.bound_attribute[id(node.value)] = dotted(node.targets[0].target) or ""
            if isinstance(node.value, cst.Call) and self.classes and self.runs_later(self.qualify(dotted(node.value.func))):
                for arg in node.value.args:  # self.train_step = jax.jit(train_step), a closure
                    self.deferred_steps.note_kept(self.classes[-1], dotted(node.targets[0].target),
                                                  self.passed_function(arg.value)[1], self.pos(node)[0])
            if isinstance(node.value, cst.Call) and self.classes:
                self.deferred_steps.note_alias(self.classes[-1], dotted(node.targets[0].target),
                                               self.held_method(node.value), self.pos(node)[0])
            # `if args.seed is None: args.seed = random.randint(...)`: later reads are not the default
            option = self.option_read(node.targets[0].target)
            if self.depth == 0 and key_of(node.targets[0].target, self.config_trees.roots) is not None:
                option = None  # __C.RESNET.MAX_POOL = False in the defaults module: the default itself
            if option is not None and option not in self.reassigned_options:
                self.reassigned_options.add(option)
                self.facts.options_set.append(option)
        if self.depth == 0 and len(node.targets) == 1:
            self.note_config_tree(node.targets[0].target, node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.bound_to[id(node.value)] = node.targets[0].target.value
            self.import_by_name(node.targets[0].target.value, node.value, node)
            # train_fn = train.train, creator = get_model_creator(hparams) (a factory returning a
            # class): the name holds project functions, called or handed on later (every branch's)
            refs = self.project_functions(node.value)
            table = dotted(node.value.value) if isinstance(node.value, cst.Subscript) else None
            if table and self.project_ref(table) and not table.startswith("self."):
                # Trainer = train_factory[opt.task]: one of the classes or functions the table holds
                refs.append(self.qualify(table) or table)
                self.table_held[(self.current_scope, node.targets[0].target.value)] = self.qualify(table) or table
            else:
                self.table_held.pop((self.current_scope, node.targets[0].target.value), None)
            if isinstance(node.value, cst.Call):
                callee = dotted(node.value.func)
                qual = self.qualify(callee) if callee else None
                if callee and not self.external(qual, callee) and not callee.startswith("self."):
                    refs.append(f"{qual or callee}()")
                if self.runs_later(qual):  # update = jax.jit(_update): update(...) runs _update
                    for arg in node.value.args:
                        value = _partial_function(arg.value, self.qualify)
                        ref = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
                        if ref and ref not in self.holders:
                            refs.append(self.function_ref(ref))
            held = self.function_names.setdefault((self.current_scope, node.targets[0].target.value), [])
            held.extend(ref for ref in refs if ref not in held)
        elif len(node.targets) == 1 and isinstance(node.targets[0].target, (cst.Tuple, cst.List)) \
                and isinstance(node.value, cst.Subscript):
            # make, width = ZOO[name]: an entry unpacked; each name may hold the table's functions
            table = dotted(node.value.value)
            if table and self.project_ref(table) and not table.startswith("self."):
                ref = self.qualify(table) or table
                for element in node.targets[0].target.elements:
                    if isinstance(element.value, cst.Name):
                        key = (self.current_scope, element.value.value)
                        self.table_held[key] = ref
                        held = self.function_names.setdefault(key, [])
                        held.extend([ref] if ref not in held else [])
        self.paths.bind(self.current_scope, [n for t in node.targets for n in bound_names(t.target)], node.value,
                        self.pos(node))
        if self.top_function is not None:
            stop = isinstance(node.value, cst.Call) and self.is_stop(node.value)
            for target in node.targets:
                for bound in bound_names(target.target):
                    (self.stopped_names.add if stop else self.stopped_names.discard)(bound)
        for target in node.targets:
            self._assigned(target.target, node.value, node)
            table = target.target.value if isinstance(target.target, cst.Subscript) else None
            if isinstance(table, cst.Name) and table.value in self.facts.tables and self.depth > 0 \
                    and self.current_scope is not None:
                # _MODELS[name] = cls in a function (a registering decorator): the table holds
                # whatever that function is given
                writers = self.facts.registrars.setdefault(table.value, [])
                if self.current_scope not in writers:
                    writers.append(self.current_scope)
            if self.depth == 0 and isinstance(target.target, cst.Name):
                self.facts.assigned.append((target.target.value, *self.pos(node)))
            elif isinstance(target.target, cst.Name) and names.evaluation_name(target.target.value):
                self.facts.evaluation_spans.append(self.pos(node))
            elif isinstance(target.target, cst.Attribute) and isinstance(target.target.value, cst.Name) \
                    and target.target.value.value == "self" and names.evaluation_name(target.target.attr.value):
                self.facts.evaluation_spans.append(self.pos(node))  # self.test_loader = DataLoader(...)
            if self.depth == 0:
                self.note_table(target.target, node.value)

    def note_table(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """A module-level dict of project functions, made whole or item by item (a model zoo's
        ``model_from_name``): what a call through it may run."""
        if isinstance(target, cst.Name):
            # an entry may hold the function with what goes with it: {"r18": [resnet18, 512]}
            refs = [dotted(v) for e in value.elements if isinstance(e, cst.DictElement)
                    for v in ([x.value for x in e.value.elements] if isinstance(e.value, (cst.List, cst.Tuple))
                              else [e.value])] if isinstance(value, cst.Dict) else None
            if refs is None:
                self.facts.tables.pop(target.value, None)
            else:
                self.facts.tables[target.value] = [self.function_ref(r) for r in refs if r and self.project_ref(r)]
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and target.value.value in self.facts.tables:
            ref = dotted(value)
            if ref and self.project_ref(ref):
                self.facts.tables[target.value.value].append(self.function_ref(ref))

    def dict_refs(self, values: list[cst.BaseExpression]) -> list[str]:
        """The project functions and classes a dict written in place holds as values."""
        refs = [dotted(e.value) for v in values if isinstance(v, cst.Dict)
                for e in v.elements if isinstance(e, cst.DictElement)]
        return list(dict.fromkeys(self.function_ref(r) for r in refs if r and self.project_ref(r)))

    def project_ref(self, ref: str) -> bool:
        """Does ``ref`` name something of the project (not a framework, the standard library or
        a builtin)?"""
        return not self.external(self.qualify(ref), ref)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:  # with tf.Graph().as_default(): a block a scoped seed stays in
            opened = self.opened_scope(item.item)
            if opened is not None:
                self.facts.scopes.append((opened, *self.pos(node)))
        self.cpu_blocks += sum(1 for item in node.items if self.on_cpu(item.item))
        self.no_grad += sum(1 for item in node.items if self.stops_autograd(item.item))
        opened = sum(1 for item in node.items if self.is_tape(item.item))
        if opened:
            self.file_flags.add("tape")
        if opened and self.top_function is not None:
            self.tape_facts.setdefault(self.scope[0], set()).add("tape")
        self.tapes += opened
        # with MonitoredTrainingSession(...) as sess: sess is what the call made
        for item in node.items:
            if item.asname is not None and isinstance(item.asname.name, cst.Name):
                self._assigned(item.asname.name, item.item, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value, node)

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements) \
                and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
            # cudnn.benchmark, cudnn.deterministic = True, False: each target gets its value (and
            # a finding points at its target)
            for each, given in zip(target.elements, value.elements):
                if isinstance(each.value, cst.Attribute):
                    self._assigned(each.value, given.value, each.value)
                else:  # a plain name: forgotten, not rebound one by one (a, b = b, a)
                    self._assigned(each.value, cst.Name("_unknown_"), stmt)
            return
        if isinstance(target, cst.Subscript):
            base = self.qualify(dotted(target.value))
            if base == "os.environ" and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                self.env_set(self.value(target.slice[0].slice.value), value, stmt, "assign")
            return
        if isinstance(target, cst.Attribute):
            owner = dotted(target.value)
            self._bind_local(dotted(target), value)  # args.seed = random.randint(1, 10000)
            kept = self.init_params.get(self.current_scope or "", {})
            if owner == "self" and isinstance(value, cst.Name) and value.value in kept:
                # self.netD = netD in __init__: the object a caller hands over is the attribute
                cls = (self.current_scope or "").split(".")[0]
                self.facts.kept_params[f"{cls}.{target.attr.value}"] = [value.value, kept[value.value]]
            if owner == "self" and isinstance(value, cst.Call) and self.current_scope and "." in self.current_scope:
                # self.head = Head(): what self.head.loss(...) runs in the class's other methods
                callee = dotted(value.func)
                key = (self.current_scope.split(".")[0], target.attr.value)
                if callee and callee.rsplit(".", 1)[-1][:1].isupper() and not self.external(self.qualify(callee), callee):
                    self.attribute_made[key] = self.qualify(callee) or callee
                else:
                    self.attribute_made.pop(key, None)
            if owner == "self" and isinstance(value, cst.Call) and self.current_scope and "." in self.current_scope:
                # self.parser = argparse.ArgumentParser() in __init__: self.parser.add_argument(...)
                # in the class's other methods defines options (BaseOptions.initialize)
                kind = self.type_of(value)
                key = (self.current_scope.split(".")[0], target.attr.value)
                if kind and self._defines_options(f"{kind}.add_argument"):
                    self.option_parsers[key] = kind
            owner_type = self.instances.get(owner) if owner else None
            qual = f"{owner_type}.{target.attr.value}" if owner_type else self.qualify(dotted(target))
            if qual:
                self.match_names("attr-assign", qual, stmt, value=self.value(value), value_node=value)
            return
        if isinstance(target, cst.Name):
            name = target.value
            self._bind_local(name, value)
            origin = self.origin_of(value) if isinstance(value, (cst.Call, cst.Subscript, cst.BinaryOperation,
                                                                  cst.Name, cst.Attribute)) else None
            if origin:
                self.origins[name] = origin
            else:
                self.origins.pop(name, None)
            method = _last_method(value)
            if method:
                self.result_of[name] = method
            else:
                self.result_of.pop(name, None)
            if self.depth == 0 and isinstance(value, cst.Call):
                self.call_bound.add(name)
            elif self.depth == 0:
                self.call_bound.discard(name)
            self.partial_args.pop(name, None)
            wrapped = _partial_function(value, self.qualify)
            if wrapped is not value and isinstance(wrapped, (cst.Name, cst.Attribute)) \
                    and self.qualify(dotted(wrapped)):
                # conv = functools.partial(slim.conv2d, padding="SAME"): conv(x, 64, 3) calls
                # slim.conv2d with the partial's arguments before its own
                self.aliases[name] = self.qualify(dotted(wrapped)) or ""
                self.partial_args[name] = tuple(value.args[1:]) if isinstance(value, cst.Call) else ()
                return
            # layers = tf.keras.layers; loader = DataLoader if weighted else InfiniteLoader (either may run)
            for named in [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]:
                qual = self.qualify(dotted(named)) if isinstance(named, (cst.Name, cst.Attribute)) else None
                if qual:
                    self.aliases[name] = qual
                    return
            if self._kept_in_branch(name, value) or self._other_arm_keeps(name, value):
                return
            self.made_by.pop(name, None)
            if isinstance(value, cst.Call):
                if dotted(value.func) in self.local_classes:
                    self.local_instances[name] = dotted(value.func) or ""
                callee = dotted(value.func)
                if callee and not self.external(self.qualify(callee), callee):
                    self.made_by[name] = self.qualify(callee) or callee
                held = self.table_held.get((self.current_scope, callee or ""))
                if held:  # trainer = Trainer(opt) with Trainer = train_factory[task]
                    self.made_by[name] = held + TABLE_ITEM
                made = self.constructed(value) if callee is None else None
                if made:  # net = Net().to(device): what .to returns is the Net
                    self.made_by[name] = made
                elif callee is None and isinstance(value.func, cst.Call):
                    # trainer = TrainerRegistry.lookup(name)(config), net = build(cfg)(num_classes):
                    # an object of whatever the project call returns (a registry's classes, a table's)
                    inner = dotted(value.func.func)
                    if inner and not inner.startswith("self.") and not self.external(self.qualify(inner), inner):
                        self.made_by[name] = f"{self.qualify(inner) or inner}(){TABLE_ITEM}"
                held = self.held_functions(value)
                if held:
                    self.holders[name] = held
                    self.unrun_holders[name] = (*self.pos(value)[2:], self.current_scope)
                    self.named_holders.add(id(value))
                kind = self.type_of(value)
                if kind:
                    self.instances[name] = kind
                    self.bound_arm[name] = self.arms[-1] if self.arms else None
                    return
                self.instances.pop(name, None)
            if self.depth == 0:
                known = self.value(value)
                if isinstance(known, (str, dict, int, float)) or known is None:
                    self.constants[name] = known  # SEED = None: a seed that re-randomises (DET106)
                else:
                    self.constants.pop(name, None)  # rebound to something not known: no longer a constant
            else:
                known = self.value(value)
                if isinstance(known, (str, int, float)) or known is None:
                    self.local_constants[(self.current_scope, name)] = known
                else:
                    self.local_constants.pop((self.current_scope, name), None)
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assigned(element.value, cst.Name("_unknown_"), stmt)

    # ---- layers and the tensors between them (see layerflow) -------------------------------------
    def _bind_local(self, name: Optional[str], value: cst.BaseExpression) -> None:
        """What ``bound_values`` gives for a local name or a dotted attribute (``args.seed``)."""
        if not name:
            return
        values = self.local_values.setdefault((self.current_scope, name), [])
        if len(self.scope) > 1:
            self.nested_bound.add((self.current_scope, name))
        if self.off_default:
            pass  # a branch the default run never takes binds nothing it uses
        elif self.if_depth:
            values[:] = [*values[-(MAX_BOUND_VALUES - 1):], value]  # every branch's, the latest few
        else:
            values[:] = [value]  # rebound whatever it held

    def layer_kind(self, call: cst.Call) -> str:
        name = dotted(call.func)
        if name in self.local_classes:
            return TRAINABLE if self.local_classes[name] else ""  # a project Layer/Model subclass
        qual = self.qualify(name)
        if not qual:
            return ""
        if qual in self.framework_classes:
            return TRAINABLE
        found = {owner for c in names.candidates(qual) for owner, _ in self.kb.index["call"].get(c, ())}
        return next((kind for group, kind in LAYER_KINDS if group in found), "")

    def flow_keys(self, name: str) -> list[str]:
        """Where a name lives: ``self.x`` in its class, others in the function, then the module."""
        if name.startswith("self.") and self.classes:
            return [f"{self.classes[-1]}:{name}"]
        return [f"{self.scope[0]}:{name}", f":{name}"] if self.scope else [f":{name}"]

    def note_input_stage(self, call: cst.Call, first: int) -> None:
        """The backprop op matches an input-stage layer's constructor just made (from index ``first``)
        count only once the layer is seen downstream of weights."""
        made = {i for i in range(first, len(self.facts.hits)) if self.facts.hits[i].owner.startswith("op:")
                and self.kb.ops[self.facts.hits[i].owner[3:]].phase == "backprop"}
        if made and self.layer_kind(call) == INPUT_STAGE:
            self.flow.note_hits(call, made)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self.seed_values -= _names_a_seed(original_node.targets)
        if self.facts.frameworks:
            self.flow.assign([t.target for t in original_node.targets], original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if self.facts.frameworks and original_node.value is not None:
            self.flow.assign([original_node.target], original_node.value)

    def leave_Expr(self, original_node: cst.Expr) -> None:
        if self.facts.frameworks:
            self.flow.expression(original_node.value)

    def leave_Return(self, original_node: cst.Return) -> None:
        if self.facts.frameworks and original_node.value is not None:
            self.flow.expression(original_node.value)

    def env_set(self, key: Any, value_node: Optional[cst.BaseExpression], stmt: cst.CSTNode, how: str) -> None:
        if not isinstance(key, str):
            return
        value = self.value(value_node) if value_node is not None else UNKNOWN
        known = known_text(value_node) if value is UNKNOWN and value_node is not None else ""
        self.env_value(key, value, stmt, how, known)

    def env_value(self, key: str, value: Any, stmt: cst.CSTNode, how: str, known: str = "") -> None:
        """``known``: the literal parts of a value built at run time (``os.environ.get("XLA_FLAGS",
        "") + " --xla_gpu_deterministic_ops=true"``), enough for a ``contains`` test."""
        value = value if isinstance(value, str) or value is UNKNOWN else (
            str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else UNKNOWN)
        for owner, i in self.kb.index["env"].get(key, ()):
            matcher = self.kb.matcher(owner, i)
            if matcher.imported_before is not None and self.imported_before(matcher.imported_modules, stmt) \
                    != matcher.imported_before:
                continue
            if value is UNKNOWN and known and matcher.value is not None and set(matcher.value.spec) == {"contains"}:
                if check(matcher.value, known):
                    self.hit(owner, i, key, stmt, f"{how}:?")
            elif matcher.value is None or check(matcher.value, value):
                detail = f"{how}:{'?' if value is UNKNOWN else value}"
                self.hit(owner, i, key, stmt, detail)

    def imported_before(self, modules: tuple[str, ...], stmt: cst.CSTNode) -> bool:
        """Was one of ``modules`` (or a submodule) imported on an earlier line of this file?"""
        line = self.pos(stmt)[0]
        return any(first < line and any(names.within(module, m) for m in modules)
                   for module, first in self.facts.import_lines.items())

    # ---- expressions -------------------------------------------------------------------------
    def visit_Expr(self, node: cst.Expr) -> None:
        if isinstance(node.value, (cst.Attribute, cst.Name)):
            qual = self.qualify(dotted(node.value))
            if qual:
                self.match_names("bare", qual, node.value)

    def match_names(self, kind: str, qual: str, node: cst.CSTNode, call: Optional[cst.Call] = None,
                    value: Any = MISSING, written: Optional[str] = None, bare: bool = False,
                    given: Optional[cst.Call] = None, value_node: Optional[cst.BaseExpression] = None) -> bool:
        """``bare``: a call written without its arguments (a decorator): only matchers that ask
        nothing of them. ``given``: the arguments the called function receives, where they are
        not only the call's own (a ``functools.partial`` adds its own)."""
        matched = False
        given = given or call
        for candidate in names.candidates(qual):
            entries = self.kb.index[kind].get(candidate, ())
            for owner, i in entries:
                matcher = self.kb.matcher(owner, i)
                if bare and matcher.kwargs:
                    continue
                detail = ""
                if call is not None and matcher.kwargs:
                    self.pending_defaults, self.pending_parameters, self.pending_needs = [], [], []
                    found = check_kwargs(given, matcher.kwargs, self.value, self.qualify,
                                         self.argument_note if owner.startswith("rule:") else self.computed_note,
                                         self.origin_of, self.bound_values)
                    if found is None:
                        continue
                    detail = found
                if matcher.value is not None and value is not MISSING and not check(matcher.value, value):
                    # cudnn.benchmark = not opt.not_cuda_benchmark and not opt.test: a boolean the
                    # program computes, so the setting holds for some runs (say which)
                    note = self.computed_note(value_node, matcher.value, value, False) \
                        if value_node is not None and value is UNKNOWN else None
                    if note is None and value_node is not None and (value is UNKNOWN or isinstance(value, Ref)):
                        note = self.option_condition(value_node, matcher.value, node)
                    if note is None:
                        continue
                    detail = f"{detail} [{note}]".strip()
                if call is not None and matcher.order_free and not self.order_read(call, matcher):
                    continue
                if call is not None and matcher.unless_only and self.read_only_through(call, matcher.unless_only):
                    continue
                if call is not None and matcher.unless_reseeded and self.reseeded(call, matcher.unless_reseeded):
                    continue
                if given is not None and matcher.unless_one_index \
                        and one_index_per_row(given, *matcher.unless_one_index, self.bound_values):
                    continue
                shown = written if written and written.rsplit(".", 1)[-1] == candidate.rsplit(".", 1)[-1] else candidate
                at = self.pointed(given, matcher, False) if given is not None else None
                self.hit(owner, i, shown, node, detail, at)
                matched = True
            if entries:  # the most specific spelling the knowledge base knows decides
                break
        return matched

    def match_methods(self, node: cst.Call, func: cst.Attribute, name: Optional[str], receiver_is_module: bool) -> None:
        """``x.shuffle(...)``: method matchers apply to framework objects and objects of unknown
        type; those with ``receiver-from`` only to objects those modules made."""
        method = func.attr.value
        origin: Optional[str] = None
        for owner, i in self.kb.index["method"].get(method, ()):
            matcher = self.kb.matcher(owner, i)
            if matcher.receiver_from:
                origin = origin or self.origin_of(func.value) or "?"
                if not any(names.within(origin, module) for module in matcher.receiver_from):
                    continue
            elif receiver_is_module:
                continue
            if matcher.receiver_not_from:  # a method of the same name on another library's object
                origin = origin or self.origin_of(func.value) or "?"
                if any(names.within(origin, module) for module in matcher.receiver_not_from):
                    continue
            if matcher.fetches and not self.fetches(node, matcher.fetches):
                continue
            if matcher.receiver_named and not _receiver_named(func.value, matcher.receiver_named):
                continue
            detail = ""
            if matcher.kwargs:
                self.pending_defaults, self.pending_parameters, self.pending_needs = [], [], []
                found = check_kwargs(node, matcher.kwargs, self.value, self.qualify,
                                     self.argument_note if owner.startswith("rule:") else self.computed_note,
                                     self.origin_of, self.bound_values)
                if found is None:
                    continue
                detail = found
            if matcher.order_free and not self.order_read(node, matcher):
                continue
            if matcher.unless_one_index and one_index_per_row(node, *matcher.unless_one_index, self.bound_values):
                continue  # q.gather(1, actions.unsqueeze(1)): its backward scatter cannot collide
            if matcher.graph_op:  # the name the op is kept under: a session runs it by that name
                detail = "op:" + (self.bound_attribute.get(id(node)) or self.bound_to.get(id(node)) or "").rsplit(".", 1)[-1]
            self.hit(owner, i, name or method, node, detail, self.pointed(node, matcher, True))

    def optimises_inputs(self, node: cst.Call, matcher: Any) -> bool:
        """Is ``node`` an optimiser of listed tensors a network is fed, made or used
        (flow/optimised_inputs.py)? Found once the imports are known (at its first match)."""
        if self._input_optimisers is None:
            modules = matcher.unless_optimises_inputs
            self._input_optimisers = {} if self.module_node is None else input_optimisers(
                self.module_node, lambda call: any(names.within(self.qualify(dotted(call.func)) or "", m) for m in modules),
                lambda name: name in self.facts.imports)
        found, networks = self._input_optimisers.get(
            None if self.current_scope in (None, MAIN_GUARD) else self.current_scope, (set(), set()))
        if not found:
            return False
        if isinstance(node.func, cst.Attribute) and matcher.kind == "method":
            # optimizer.step(); self.model.zero_grad() of the network the input is fed to beside
            # it (a model's own optimiser, as in adversarial training, still trains)
            receiver = dotted(node.func.value)
            return receiver in found or receiver in networks
        return (self.bound_to.get(id(node)) or self.bound_attribute.get(id(node))) in found

    def object_called(self, node: cst.Call, name: str) -> None:
        """``name`` holds an object a library made and ``node`` calls it, or hands it to a
        project function that will: the knowledge base's ``__call__`` method matchers whose
        ``receiver-from`` names its maker apply here."""
        origin = self.origins.get(name)
        if not origin or name in self.made_by:
            return
        for owner, i in self.kb.index["method"].get("__call__", ()):
            matcher = self.kb.matcher(owner, i)
            if any(names.within(origin, module) for module in matcher.receiver_from):
                self.hit(owner, i, name, node)

    def fetches(self, call: cst.Call, methods: tuple[str, ...]) -> bool:
        """Is a positional argument of ``call`` (or an item of a list, tuple or dict there) the
        result of one of ``methods``, called there or bound to a name before?"""
        values: list[cst.BaseExpression] = []
        for arg in call.args:
            if arg.keyword is None:
                values.append(arg.value)
        for value in list(values):
            if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
                values.extend(e.value for e in value.elements if isinstance(e, cst.Element))
            elif isinstance(value, cst.Dict):
                values.extend(e.value for e in value.elements if isinstance(e, cst.DictElement))
        for value in values:
            made = self.result_of.get(dotted(value) or "") if isinstance(value, (cst.Name, cst.Attribute)) else \
                _last_method(value)
            if made in methods:
                return True
        return False

    def origin_of(self, node: cst.BaseExpression) -> Optional[str]:
        """What made an expression's value, where that is known: ``pandas.read_csv`` for ``df``
        after ``df = pd.read_csv(...)``, and for ``df.dropna()``, ``df["a"]``, ``df.a``;
        ``pathlib.Path`` for ``Path(d) / "x"``. Methods, attributes, subscripts and operators are
        taken to give an object of the same library."""
        while True:
            name = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            if name:
                known = self.origins.get(name) or self.qualify(name)
                if known:
                    return known
            if isinstance(node, cst.Attribute):
                node = node.value
            elif isinstance(node, cst.Call):
                node = node.func
            elif isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.BinaryOperation):
                node = node.left
            else:
                return None

    def read_only_through(self, call: cst.Call, attributes: tuple[str, ...]) -> bool:
        """Is the call's result only ever read through one of ``attributes`` (``vgg16().features``,
        or ``vgg = vgg16()`` with every later mention of ``vgg`` in the function ``vgg.features``)?
        A model cut down to its feature layers never runs its head."""
        def through(path: str, line: str, start: int, end: int) -> bool:
            # "action_space.n" is read through "action_space.n"; "reset()" is a call whose
            # result is dropped (a statement of its own: `env.reset()`)
            dropped = not line[:start].strip() and line[end:].lstrip().startswith("(")
            return any(path == a or path.startswith(a + ".") or (dropped and a == path + "()") for a in attributes)

        if self.read_attribute.get(id(call)) in attributes:
            return True
        name = self.bound_to.get(id(call))
        # self.net = vgg19(...), then self.net = nn.Sequential(*self.net.features) in the same
        # method: the other methods only ever see the parts
        kept = name is None and self.top_function is not None and self.bound_attribute.get(id(call))
        if kept:
            name = self.bound_attribute[id(call)]
        if name is None:
            return False
        every = python_lines(self.source)
        line = self.pos(call)[0]
        # ... rebound at the binding's own indentation (not under an `if` the default run may skip)
        indent = re.match(r"\s*", every[line - 1]).group(0)
        if kept and not any(re.match(rf"{indent}{re.escape(name)}\s*=(?!=)", text)
                            for text in every[line:self.pos(self.top_function)[2]]):
            return False
        if self.top_function is not None:  # after the binding line, to the function's end
            lines = every[line:self.pos(self.top_function)[2]]
        else:  # a module's name: its functions may use it wherever they are defined
            lines = every[:line - 1] + every[line:]
        # every mention but `del name` (an environment made to read its spaces, then dropped), a
        # new binding of the name (the other branch's `model = vgg16(...)`), another object's
        # attribute of the same name (`self.env`) and comments
        mentions = [m for line in lines for m in re.finditer(rf"(?<![.\w]){re.escape(name)}\b((?:\.\w+){{0,2}})", line)
                    if not re.search(r"\bdel\s+$", line[:m.start()]) and "#" not in line[:m.start()]
                    and not (not m.group(1) and re.match(r"\s*=(?!=)", line[m.end():]))]
        return bool(mentions) and all(through(m.group(1)[1:], m.string, m.start(), m.end()) for m in mentions)

    def reseeded(self, call: cst.Call, methods: tuple[str, ...]) -> bool:
        """Is the object made by ``call`` (bound to a name or ``self.attr``) given a seed later in
        the file (``rng.seed(seed)``, ``self.rng.seed(self.seed + epoch)``), with an argument?"""
        name = self.bound_to.get(id(call)) or self.bound_attribute.get(id(call))
        if not name:
            return False
        called = "|".join(re.escape(m) for m in methods)
        pattern = rf"(?<![\w.]){re.escape(name)}\.(?:{called})\(\s*[^)\s]"
        return any(re.search(pattern, line) and "#" not in line[:line.find(name)]
                   for line in python_lines(self.source))

    def order_read(self, call: cst.Call, matcher: Any) -> bool:
        """Is the order of ``call``'s result read (not only sorted, counted, tested or shown)?"""
        if self.display_calls:
            return False

        def loses_order(outer: cst.Call) -> bool:
            written = dotted(outer.func)
            qual = self.qualify(written)
            if qual is None and written in BUILTIN_NAMES and written not in self.facts.functions:
                qual = f"builtins.{written}"
            if qual and any(c in matcher.order_free for c in names.candidates(qual)):
                return True
            return self.is_display(qual, written, outer)

        return ordering.order_matters(call, self.suites, self.pos, loses_order)

    def visit_Call(self, node: cst.Call) -> None:
        self.call_depth += 1
        first = len(self.facts.calls)
        self._visit_call(node)
        if self.cpu_blocks:  # what it runs is placed on the CPU too (``with tf.device("/cpu:0"): Net()``)
            self.facts.calls[first:] = [replace(c, on_cpu=True) for c in self.facts.calls[first:]]

    def _visit_call(self, node: cst.Call) -> None:
        name = dotted(node.func)
        qual = self.qualify(name)
        start = len(self.facts.hits)
        self.note_argument_types(node, name, qual)
        # layer(x) calls an object built earlier: its constructor was matched there
        if qual and not (name in self.instances and name not in self.aliases):
            if qual in ENV_CALLS or qual == "os.environ.update":
                self.env_call(qual, node)
            first = len(self.facts.hits)
            self.match_names("call", qual, node, call=node, written=name, given=self.with_partial_args(node, name))
            self.note_input_stage(node, first)
            self.define_option(qual, node)
            self.set_defaults(qual, node)
        elif qual is None and name and name.startswith("self.") and name.count(".") == 2 and self.current_scope:
            attr, method = name.split(".")[1:]
            kind = self.option_parsers.get((self.current_scope.split(".")[0], attr))
            if kind:
                self.define_option(f"{kind}.{method}", node)
                self.set_defaults(f"{kind}.{method}", node)
        if name in self.library_bases:  # a subclass made: what making its library base does
            self.match_names("call", self.library_bases[name], node, call=node, written=name)
        if isinstance(node.func, cst.Attribute):
            receiver = dotted(node.func.value)
            receiver_is_module = receiver is not None and receiver.split(".")[0] in self.aliases and \
                receiver not in self.instances
            kind = self.type_of(node.func.value)
            if kind is not None and not self.is_framework_name(kind):
                receiver_is_module = True  # clf.fit(...) on a scikit-learn object, Pool().map(...)
            self.match_methods(node, node.func, name, receiver_is_module)
        if mapped_step(node, qual):  # tree_map(lambda p, g: p - lr * g, params, grads)
            self.match_names("shape", GRADIENT_STEP, node)
        self.note_gradient_target(node, qual, start)
        self.note_tape_step(qual, node, start)
        self.note_methods_run(node, start)
        # the call graph: which project functions may run here (calls into frameworks, the
        # standard library and builtins cannot, and are most calls: they are not kept)
        line, col = self.pos(node)[:2]
        self.call_spots.setdefault(self.current_scope, {})[id(node)] = (line, col, 1)
        self.callee_at[(line, col)] = (name or "").rsplit(".", 1)[-1]
        if self._in_group(STOPS, qual, node) or self._in_group(NO_GRADIENT, qual, node):
            self.stopping_scopes.add(self.current_scope)
        self.branches.note_call(name, qual, node)
        inference = bool(self.inference_branches) or training_branches.training_false(node)
        no_grad = inference or bool(self.stop_calls)
        self.frozen_models.note_call(node, no_grad or self.no_grad > 0)
        # outside any tape block, lambda or nested def: it runs when its function does
        untaped = not self.tapes and not self.lambdas and (self.top_function is None or self.depth == self.top_depth)
        made = self.object_calls(name)
        for target in made:
            self.facts.calls.append(CallSite(target, line, col, self.current_scope, no_grad, inference, untaped))
        head, _, method = (name or "").partition(".")
        if method and "." not in method and not made and head in self.result_of \
                and head not in self.instances and head not in self.aliases and self.current_scope is not None:
            # trainer = exp.get_trainer(args); trainer.train(): an object no one here can see into
            self.facts.calls.append(CallSite(f"{SPELLED}{name}", line, col, self.current_scope, no_grad, inference,
                                             untaped))
        if made or (name and not self.external(qual, name)):
            self.note_call_args(node, line, col)
        self.note_config_files(node)
        if name and not self.external(qual, name):
            self.facts.calls.append(CallSite(qual or name, line, col, self.current_scope, no_grad, inference, untaped))
        elif (evaluated := self.evaluated_option(node.func)) is not None:
            # eval(opt.model).Model(opt): what the option's default names (program.py)
            self.facts.calls.append(CallSite(f"{EVALUATED}{evaluated[1]}", line, col, self.current_scope, no_grad,
                                             inference, untaped, key=evaluated[0]))
        elif isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Call):
            # Trainer(cfg).run_loop(): a method of the object just made (of a project class)
            made = dotted(node.func.value.func)
            made_qual = self.qualify(made) if made else None
            if made and not self.external(made_qual, made) and made.rsplit(".", 1)[-1][:1].isupper():
                after = self.pos(node.func.value)[2:]  # it runs after the constructor, not before
                self.facts.calls.append(CallSite(f"{made_qual or made}.{node.func.attr.value}", *after,
                                                 self.current_scope, no_grad, inference, untaped))
        elif isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Subscript) \
                and isinstance(node.func.value.value, cst.Name) and self.current_scope is not None:
            # model_dict = {"conv": Conv, ...}; model_dict[args.model].Model(args): that name in
            # any module (or class) the dict written in the function holds
            for ref in self.dict_refs(self.bound_values(node.func.value.value.value)[-1:]):
                self.facts.calls.append(CallSite(f"{ref}.{node.func.attr.value}", line, col, self.current_scope,
                                                 no_grad, inference, untaped))
        elif self.namespace_lookup(node.func):
            # getattr(models, cfg.arch)(...), models.__dict__[name](...): one of the module's callables
            self.facts.calls.append(CallSite(f"{self.namespace_lookup(node.func)}.*", line, col, self.current_scope,
                                             no_grad, inference, untaped, key=self.looked_up_option(node.func)))
        elif isinstance(node.func, cst.Call) and dotted(node.func.func) is not None:
            # get_model(name)(config): whatever the project function returns is called
            callee = dotted(node.func.func) or ""
            callee_qual = self.qualify(callee)
            if not self.external(callee_qual, callee) and not callee.startswith("self."):
                self.facts.calls.append(CallSite(f"{callee_qual or callee}()", line, col, self.current_scope,
                                                 no_grad, inference, untaped))
        elif isinstance(node.func, cst.Subscript):  # MODELS[name](...): what a dict of functions holds
            table = dotted(node.func.value)
            # model_dict = {"informer": Informer, ...} in the function: any class it holds
            local = self.dict_refs(self.bound_values(node.func.value.value)[-1:]) \
                if isinstance(node.func.value, cst.Name) and self.current_scope is not None else []
            for ref in local:
                self.facts.calls.append(CallSite(ref, line, col, self.current_scope, no_grad, inference, untaped))
            if table and not local and self.project_ref(table):
                self.facts.calls.append(CallSite(self.qualify(table) or table, line, col, self.current_scope,
                                                 no_grad, inference, untaped))
        if name and not self.external(qual, name):
            # get_instance(models, "arch", cfg): a project module handed to a project function is
            # there to have one of its callables looked up and called
            for position, arg in enumerate(node.args):
                self.note_handed(qual or name, arg, position)
                module = self.project_module(arg.value)
                if module:
                    self.facts.calls.append(CallSite(f"{module}.*", line, col, self.current_scope,
                                                     no_grad, inference, untaped))
                # run_main(flags, train_fn=train.train): a function handed to a project function
                # runs there (the callee calls its parameter; which call is not told)
                # (at a module's level a function handed on is more often kept: `Wrapped = wraps(f)`)
                for ref in self.project_functions(arg.value) if self.current_scope is not None else ():
                    if ref != module:
                        self.facts.calls.append(CallSite(ref, line, col, self.current_scope, no_grad, inference,
                                                         untaped))
                # train_one_epoch(model, loss_scaler): an object of a project class handed to a
                # project function is called there (its __call__ runs: a loss scaler's backward)
                made = self.made_by.get(arg.value.value) if isinstance(arg.value, cst.Name) else None
                if made and made.rsplit(".", 1)[-1][:1].isupper():
                    self.facts.calls.append(CallSite(f"{made}.__call__", line, col, self.current_scope,
                                                     no_grad, inference, untaped))
                elif isinstance(arg.value, cst.Name) and any(first <= line <= last for first, last in self.facts.loops):
                    # ... and so is a library object (timm's NativeScaler) handed on in a loop (an
                    # epoch's train_one_epoch; once after the loop it is saved, not called)
                    self.object_called(node, arg.value.value)
            for ref in self.function_names.get((self.current_scope, name), ()):  # creator(...): what it holds
                self.facts.calls.append(CallSite(ref, line, col, self.current_scope, no_grad, inference, untaped))
        if isinstance(node.func, cst.Name):
            self.object_called(node, node.func.value)  # loss_scaler(loss, optimizer)
            if any(_looked_up_by_name(value) for value in self.bound_values(node.func.value)):
                # m = eval(m) ... m(*args): one of the callables the module's star imports bring
                for star in self.facts.star_imports:
                    self.facts.calls.append(CallSite(f"{star}.*", line, col, self.current_scope, no_grad,
                                                     inference, untaped))
        if self._in_group(CONFIG_BUILDERS, qual, node) and node.args \
                and not isinstance(node.args[0].value, cst.SimpleString):
            # instantiate(cfg.model), import_module(cfg["target"]): a class the configs name
            self.facts.calls.append(CallSite(CONFIGURED, line, col, self.current_scope, no_grad, inference, untaped))
        if self._in_group(STOPS, qual, node):
            self.stop_calls.append(node)
        for base in self.super_targets(node):  # super().__init__() runs a project base class's code
            self.facts.calls.append(CallSite(base, line, col, self.current_scope))
        if name in self.instances and name not in self.aliases and self.runs_later(qual):
            # update(params, batch) with update = jax.jit(_update): runs _update now
            for scope in dict.fromkeys((self.current_scope, None)):
                for ref in self.function_names.get((scope, name), ()):
                    self.facts.calls.append(CallSite(ref, line, col, self.current_scope, no_grad, inference, untaped))
        elif self.runs_its_arguments(qual, node):
            receiver = [node.func.value] if isinstance(node.func, cst.Attribute) else []
            later = self.runs_later(qual)
            for arg in node.args:
                value = _partial_function(arg.value, self.qualify)
                if isinstance(value, (cst.Name, cst.Attribute)):
                    ref = dotted(value)
                    if ref and ref not in self.holders:
                        self.facts.calls.append(CallSite(self.function_ref(ref), line, col, self.current_scope,
                                                         deferred=later))
            for value in receiver + [arg.value for arg in node.args]:
                self.run_held(dotted(value), line, col)
            default = self.default_function(qual)
            if default and not any(isinstance(a.value, (cst.Name, cst.Attribute, cst.Lambda))
                                   and dotted(a.value) != "None" for a in node.args):
                # "*": the command line picks one of the module's public functions (fire.Fire())
                chosen = [name for name in self.facts.functions if "." not in name and not name.startswith("_")] \
                    if default == "*" and not node.args else [] if default == "*" else [default]
                for function in chosen:  # a command named for evaluation (`test`) runs outside training
                    self.facts.calls.append(CallSite(function, line, col, self.current_scope, no_grad=False,
                                                     inference=default == "*" and names.evaluation_command(function)))
        if isinstance(node.func, cst.Attribute) and dotted(node.func.value) in self.holders \
                and self._in_group(INFERENCE, qual, node):
            # estimator.evaluate(input_fn): the model_fn runs, in evaluation: it trains nothing
            holder = dotted(node.func.value) or ""
            self.unrun_holders.pop(holder, None)
            for ref in self.holders[holder]:
                self.facts.calls.append(CallSite(ref, line, col, self.current_scope, no_grad=True, inference=True,
                                                 untaped=untaped))
        if id(node) not in self.named_holders:  # Estimator(model_fn=f).train(...), return Estimator(...)
            end_line, end_col = self.pos(node)[2:]
            for ref in self.held_functions(node):
                self.facts.calls.append(CallSite(ref, end_line, end_col, self.current_scope))
        if isinstance(node.func, cst.Attribute) and self._in_group(CONFIG_MERGERS, None, node) \
                and MERGED not in self.facts.options_set:
            self.facts.options_set.append(MERGED)  # cfg.merge_from_file(args.config_file)
        if self.is_display(qual, name, node):
            self.display_calls.append(node)
            self.display_depths.append(self.call_depth)

    def with_partial_args(self, node: cst.Call, name: Optional[str]) -> cst.Call:
        """``conv(x, 64)`` with ``conv = partial(slim.conv2d, padding="SAME")``: the call the
        wrapped function receives (the partial's positional arguments first, the call's keywords
        over the partial's)."""
        given = self.partial_args.get(name or "")
        if not given:
            return node
        named = {a.keyword.value for a in node.args if a.keyword is not None}
        positional = [a for a in given if a.keyword is None and not a.star]
        keywords = [a for a in given if a.keyword is not None and a.keyword.value not in named]
        own_positional = [a for a in node.args if a.keyword is None and not a.star]
        # starred arguments of either may carry anything: has_star_args sees them last
        rest = [a for a in node.args if a.keyword is not None or a.star] + [a for a in given if a.star]
        return node.with_changes(args=[*positional, *own_positional, *keywords, *rest])

    def note_gradient_target(self, node: cst.Call, qual: Optional[str], start: int) -> None:
        """``opt.minimize(loss)``, ``tape.gradient(loss, ...)``: what the block differentiates."""
        if self._in_group(LOSS_COLLECTIONS, qual, node):
            self.paths.opaque(self.current_scope)
            self.file_flags.add("other gradients")  # a loss taken from a collection, not a tape
        if any(h.owner == GRADIENT_TARGETS for h in self.facts.hits[start:]):
            loss = argument(node, "loss", 0)
            for keyword in ("target", "ys"):
                loss = loss if loss is not None else argument(node, keyword, 0)
            if loss is None:
                self.paths.opaque(self.current_scope)  # a loss this walk cannot see
            else:
                self.paths.root(self.current_scope, loss, self.limited_to(node))

    def limited_to(self, node: cst.Call) -> Optional[list[str]]:
        """``minimize(loss, var_list=[A, b])``: the variables a gradient target is limited to,
        when each is a name this block bound only to a new variable; None for any other list."""
        method = dotted(node.func)
        pos = {"minimize": 2, "compute_gradients": 1}.get((method or "").rsplit(".", 1)[-1])
        listed = argument(node, "var_list", pos)
        if not isinstance(listed, (cst.List, cst.Tuple)) or not listed.elements:
            return None
        made: dict[str, list[bool]] = {}
        for targets, value, _, _ in self.paths.block(self.current_scope).bindings:
            for name in targets:
                qual = self.qualify(dotted(value.func)) if isinstance(value, cst.Call) else None
                made.setdefault(name, []).append(bool(qual) and qual.rsplit(".", 1)[-1] in ("Variable", "get_variable"))
        names = [e.value.value for e in listed.elements if isinstance(e.value, cst.Name)]
        if len(names) != len(listed.elements) or not all(made.get(n) and all(made[n]) for n in names):
            return None
        return names

    def constructed(self, value: cst.BaseExpression) -> Optional[str]:
        """The project class whose object an expression is: ``Net(...)``, ``Net().to(device)``
        (methods that return their receiver: returns-receiver), a name made so; else None."""
        if isinstance(value, cst.Name):
            made = self.made_by.get(value.value)
            return made if made and made.rsplit(".", 1)[-1][:1].isupper() else None
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and isinstance(value.func.value, cst.Call) and self._in_group(RETURNS_RECEIVER, None, value):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return None
        callee = dotted(value.func)
        qual = self.qualify(callee) if callee else None
        if not callee or self.external(qual, callee) or not callee.rsplit(".", 1)[-1][:1].isupper():
            return None
        return qual or callee

    def note_argument_types(self, node: cst.Call, name: Optional[str], qual: Optional[str]) -> None:
        """``Trainer(netD=netD, ...)`` with ``netD = Discriminator()``: the project classes of
        what a project class's constructor is given, by keyword or position (``#0``), so the
        methods its object calls on what it keeps (``self.netD.train_step``) can be followed."""
        if not name or self.external(qual, name) or not name.rsplit(".", 1)[-1][:1].isupper():
            return
        given = []
        for i, arg in enumerate(a for a in node.args if not a.star):
            made = self.constructed(arg.value)
            if made:
                given.append(f"{arg.keyword.value if arg.keyword else '#' + str(i)}={made}")
        if given:
            line, col = self.pos(node)[:2]
            self.facts.arg_types[f"{line}:{col}"] = given

    def call_matchers(self, qual: Optional[str]) -> Iterator[Any]:
        """The knowledge base's call matchers of a qualified name (any spelling of it)."""
        for candidate in names.candidates(qual) if qual else ():
            for owner, i in self.kb.index["call"].get(candidate, ()):
                yield self.kb.matcher(owner, i)

    def runs_later(self, qual: Optional[str]) -> bool:
        """Does this runner return the function it is given, transformed (``jax.jit``)?"""
        return any(m.runs_later for m in self.call_matchers(qual))

    def default_function(self, qual: Optional[str]) -> Optional[str]:
        return next((m.runs_by_default for m in self.call_matchers(qual) if m.runs_by_default), None)

    def held_functions(self, node: cst.Call) -> list[str]:
        """The functions a function-holders constructor is given (``model_fn=model_fn``)."""
        qual = self.qualify(dotted(node.func))
        out: list[str] = []
        for candidate in names.candidates(qual) if qual else ():
            for owner, i in self.kb.index["call"].get(candidate, ()):
                for arg_name, pos in self.kb.matcher(owner, i).holds.items():
                    fn = argument(node, arg_name, pos)
                    ref = dotted(fn) if fn is not None else None
                    if ref:
                        out.append(self.function_ref(ref))
        return out

    def held_method(self, call: cst.Call) -> Optional[str]:
        """The method of ``self`` a wrapped function value holds: ``functools.partial(self.step, rng)``,
        ``jax.pmap(partial(jax.lax.scan, self.step))``: ``step``."""
        qual = self.qualify(dotted(call.func)) or ""
        if qual != "functools.partial" and not self.runs_later(qual):
            return None
        for arg in call.args:
            if arg.keyword is not None or arg.star:
                continue
            value = arg.value
            if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
                return value.attr.value
            if isinstance(value, cst.Call):
                held = self.held_method(value)
                if held is not None:
                    return held
        return None

    def function_ref(self, ref: str) -> str:
        """What runs when the function named ``ref`` runs: ``model_fn = model_fn_builder(cfg)``
        hands over a closure defined in model_fn_builder, whose scope holds its code."""
        return self.made_by.get(ref) or self.qualify(ref) or ref

    def run_held(self, name: Optional[str], line: int, col: int) -> None:
        """A runner runs an object that keeps functions: they run here."""
        if name in self.holders:
            self.unrun_holders.pop(name, None)
            for ref in self.holders[name]:
                self.facts.calls.append(CallSite(ref, line, col, self.current_scope))

    def leave_Module(self, original_node: cst.Module) -> None:
        for key, default in self.config_trees.defaults.items():  # read by the programs that run this module
            self.facts.options.setdefault(key, default)
        self.facts.frozen_bindings = self.frozen_models.lines()
        self.facts.partly_frozen = self.frozen_models.partly_lines()
        if mentions_sys_path(self.source):  # import _init_paths: the folders it puts on sys.path
            self.facts.path_folders = sys_path_folders(original_node, self.qualify)
        # holders no runner was seen to run (returned, stored on self): their functions run where
        # the object was made, after its arguments (a RunConfig seed among them)
        for name, (line, col, scope) in self.unrun_holders.items():
            for ref in self.holders[name]:
                self.facts.calls.append(CallSite(ref, line, col, scope))
        unreached = self.flow.unconfirmed()  # positions in the hits as the walk left them
        if unreached:
            self.facts.hits = [h for i, h in enumerate(self.facts.hits) if i not in unreached]
        if self.aside_hits:  # kept where one of their methods calls them (see hit)
            reached = {methods: _called_from(self.facts, methods) for methods in set(self.aside_hits.values())}
            self.facts.hits = [h for h in self.facts.hits
                               if id(h) not in self.aside_hits or h.scope in reached[self.aside_hits[id(h)]]]
        self.drop_dead_branches()
        self.record_exports()
        if self.plain_functions or self.plain_classes:  # named once: in its def (strings count as names, comments do not)
            words = Counter(WORD_RE.findall(self.source))
            words.subtract(WORD_RE.findall(" ".join(self.comments)))
            self.facts.unreferenced = [name for name in self.plain_functions + self.plain_classes if words[name] == 1]
        if self.op_attributes and not DYNAMIC_SUBMODULES.search(self.source):
            # `self.pad1 = nn.ReplicationPad1d(...)` and pad1 named nowhere else in the file: never
            # called here (the engine asks the project's other files)
            words = Counter(WORD_RE.findall(self.source))
            words.subtract(WORD_RE.findall(" ".join(self.comments)))
            self.facts.lone_attributes = sorted([line, col, attr] for (line, col), attr in self.op_attributes.items()
                                                if words[attr] == 1)
        self.facts.off_gradient = self.paths.off_gradient(
            h for h in self.facts.hits if h.owner.startswith("op:") and self.kb.ops[h.owner[3:]].phase == "backprop"
        ) + self.facts.off_gradient
        self.judge_sinks([None, MAIN_GUARD], original_node.body, module=True)
        self.facts.builders = sorted(self.builders)
        # a parameter this file passes by keyword somewhere may be set: its hits stay
        self.facts.safe_defaults = [d for d in self.facts.safe_defaults if d[2] not in self.keywords]
        # ... and a hit judged by a parameter's default goes (a caller may pass another value)
        if self.default_judged:
            self.facts.hits = [h for h in self.facts.hits
                               if self.default_judged.get(id(h)) not in self.project_keywords]
        self.facts.gradient_style = sorted(self.file_flags)
        # last, as they make new hits (the filters above know hits by id): what a closure compiled
        # in a constructor holds runs where the attribute is called; a draw only shown is displayed
        self.facts.hits = self.shown_values.finish(self.deferred_steps.moved(self.facts.hits))
        self.facts.worker_hits = [h for h in self.facts.hits if h.worker_side]
        if self.facts.worker_hits:
            self.facts.hits = [h for h in self.facts.hits if not h.worker_side]
        self.facts.calls = self.deferred_steps.moved(self.facts.calls)
        for klass, attribute, line, call in self.deferred_steps.alias_calls(self.facts.classes):
            self.facts.calls.append(call)
            self.facts.classes.setdefault(klass, []).append(attribute)
            self.facts.functions.setdefault(f"{klass}.{attribute}", line)
        for klass, attribute, line in self.deferred_steps.methods():
            if attribute not in self.facts.classes.get(klass, []):
                self.facts.classes.setdefault(klass, []).append(attribute)
            self.facts.functions.setdefault(f"{klass}.{attribute}", line)

    def record_exports(self) -> None:
        """What importing modules take from this one: its aliases and framework classes."""
        for name, imported in self.aliases.items():
            qual = self.qualify(name)
            # a re-exported factory or framework class stays one for the importer (as an
            # outline of this module says): ``from .deepfm import DeepFM`` in a package
            if imported in self.makers:
                self.facts.exports[name] = LOCAL_RETURNS + self.makers[imported]
            elif imported in self.factories or imported in self.framework_classes:
                self.facts.exports[name] = LOCAL_FUNCTION if imported in self.factories else LOCAL_FRAMEWORK
            elif qual and not qual.startswith("."):
                self.facts.exports[name] = qual
        for name in self.facts.classes:
            if self.local_classes.get(name):
                self.facts.exports[name] = LOCAL_FRAMEWORK
        for name, kind in self.facts.made_types.items():
            if "." not in name:
                self.facts.exports[name] = LOCAL_RETURNS + kind
        # a Capitalised function, or a name bound to what a call made (``Unet = wrap(_Unet)``):
        # calling it is no constructor of a class of that name
        for name in [*self.facts.functions, *(self.call_bound - set(self.facts.classes))]:
            if "." not in name and names.factory_name(name, name in self.facts.functions) \
                    and name not in self.facts.exports:
                self.facts.exports[name] = LOCAL_FUNCTION

    def drop_dead_branches(self) -> None:
        """Forget what sits in branches no call of their function takes (``if is_training:`` in a
        function every caller passes ``is_training=False``)."""
        if not self.branches.guards:
            return
        # a module that runs as a script (a main guard, project calls at module level) is not
        # what other modules import; elsewhere only private functions are sure to have no other callers
        script = self.facts.main_guard is not None or any(c.scope is None for c in self.facts.calls)
        dead = self.branches.dead_lines(
            self.source, lambda node: literal(node, self.qualify, self.constants),
            lambda name: not script and not name.startswith("_"))
        if dead:
            def alive(line: int) -> bool:
                return not any(first <= line <= last for first, last in dead)

            self.facts.hits = [h for h in self.facts.hits if alive(h.line)]
            self.facts.calls = [c for c in self.facts.calls if alive(c.line)]

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.shown_values.read:  # shown: an argument of the display call itself
            self.shown_values.note_read(node.value, bool(self.display_calls)
                                        and self.display_depths[-1] == self.call_depth)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.formatted += _names_an_address(node)

    def leave_FormattedString(self, original_node: cst.FormattedString) -> None:
        self.formatted -= _names_an_address(original_node)

    def leave_Call(self, original_node: cst.Call) -> None:
        self.call_depth -= 1
        if self.display_calls and self.display_calls[-1] is original_node:
            self.display_calls.pop()
            self.display_depths.pop()
        if self.stop_calls and self.stop_calls[-1] is original_node:
            self.stop_calls.pop()

    def is_display(self, qual: Optional[str], name: Optional[str], node: cst.Call) -> bool:
        """print(...), plt.plot(...), ax.hist(...): what is drawn for them is only shown."""
        if qual is None and name in BUILTIN_NAMES and name not in self.facts.functions:
            qual = f"builtins.{name}"
        return self._in_group(DISPLAYS, qual, node)

    def super_targets(self, node: cst.Call) -> list[str]:
        func = node.func
        if not (self.bases and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call)
                and isinstance(func.value.func, cst.Name) and func.value.func.value == "super"):
            return []
        out = []
        for base in self.bases[-1]:
            qual = self.qualify(base)
            if not self.external(qual, base):
                out.append(f"{qual or base}.{func.attr.value}")
        return out

    def external(self, qual: Optional[str], name: str) -> bool:
        if qual is None:
            return "." not in name and name in BUILTIN_NAMES and name not in self.facts.functions
        top = qual.split(".")[0]
        return top in EXTERNAL_MODULES or top in self.framework_tops

    def runs_its_arguments(self, qual: Optional[str], node: cst.Call) -> bool:
        """app.run(main), Thread(target=f), ds.map(f): calls that run a function they are given."""
        return self._in_group(RUNNERS, qual, node)

    def _in_group(self, group: str, qual: Optional[str], node: cst.Call) -> bool:
        if qual and any(owner == group for c in names.candidates(qual)
                        for owner, _ in self.kb.index["call"].get(c, ())):
            return True
        if isinstance(node.func, cst.Attribute):
            return any(owner == group for owner, _ in self.kb.index["method"].get(node.func.attr.value, ()))
        return False

    def env_call(self, qual: str, node: cst.Call) -> None:
        args = [a for a in node.args if a.keyword is None and not a.star]
        if qual in ENV_CALLS:
            if args:
                self.env_set(self.value(args[0].value), args[1].value if len(args) > 1 else None, node,
                             qual.rsplit(".", 1)[-1])
            return
        # os.environ.update({...}) / update(NAME=...) / update(mapping_constant)
        for arg in node.args:
            if arg.keyword is not None:
                self.env_set(arg.keyword.value, arg.value, node, "update")
            elif not arg.star or arg.star == "**":
                mapping = self.value(arg.value)
                if isinstance(mapping, dict):
                    for key, value in mapping.items():
                        self.env_value(key, value, node, "update")

    def visit_While(self, node: cst.While) -> None:
        self.facts.loops.append(self.pos(node)[::2])
        self._forget_rebound(node.body)

    def _forget_rebound(self, body: cst.CSTNode) -> None:
        """A name the loop body binds may differ from its value before the loop from the second
        iteration on (``kept = None`` ... ``if kept is not None:`` ... ``kept = model(x)``): it
        is no constant inside the loop."""
        for name in _stored(body, assignments=True, others=False):
            self.local_constants.pop((self.current_scope, name), None)
            if self.depth == 0:
                self.constants.pop(name, None)

    def visit_For(self, node: cst.For) -> None:
        self.facts.loops.append(self.pos(node)[::2])
        self._forget_rebound(node.body)
        for name in bound_names(node.target):  # for shuffle in (True, False): no literal of before
            self.local_constants.pop((self.current_scope, name), None)
            self.local_values.pop((self.current_scope, name), None)
        self.frozen_models.note_loop(node, self.pos(node)[0])
        self.paths.bind(self.current_scope, bound_names(node.target), node.iter, None)
        it = node.iter
        self.iterates(it)
        # for k, v in {"TF_DETERMINISTIC_OPS": "1"}.items(): os.environ[k] = v
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "items":
            mapping = self.value(it.func.value)
            if isinstance(mapping, dict) and _loop_sets_environ(node, self.qualify):
                for key, value in mapping.items():
                    self.env_value(key, value, node, "assign")


    def iterates(self, it: cst.BaseExpression) -> None:
        """``for batch in trainset:`` over an object of a project class runs its ``__iter__`` and
        ``__next__`` (a data loader that shuffles or augments there)."""
        call = isinstance(it, cst.Call)
        name = dotted(it.func) if isinstance(it, cst.Call) else dotted(it)
        if not name:
            return
        kind = (name if name in self.local_classes else None) if call else self.local_instances.get(name)
        if kind is None:
            kind = self.qualify(name) if call else self.instances.get(name)
            if not kind or kind.startswith("<") or self.external(kind, kind) or self.is_framework_name(kind):
                return
        line, col = self.pos(it)[:2]
        for method in ("__iter__", "__next__"):
            self.facts.calls.append(CallSite(f"{kind}.{method}", line, col, self.current_scope))


def _names_and_attributes(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The names and dotted names an expression reads (``torch.no_grad`` whole, and ``torch``)."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        yield node
    for child in node.children:
        yield from _names_and_attributes(child)


class _Stores(cst.CSTVisitor):
    """The names a block binds: by ``+=`` always; by plain assignment, and by the other binding
    forms (a loop or ``with`` target, a comprehension, ``:=``, ``except ... as``), as asked."""

    def __init__(self, assignments: bool, others: bool) -> None:
        super().__init__()
        self.assignments, self.others = assignments, others
        self.names: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.assignments:
            for target in node.targets:
                self.names.update(bound_names(target.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.names.update(bound_names(node.target))

    def _other(self, target: Optional[cst.CSTNode]) -> None:
        if self.others and target is not None:
            self.names.update(bound_names(target))

    def visit_For(self, node: cst.For) -> None:
        self._other(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._other(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self._other(node.asname.name if node.asname is not None else None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._other(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._other(node.name.name if node.name is not None else None)


def _stored(block: cst.CSTNode, assignments: bool, others: bool) -> set[str]:
    stores = _Stores(assignments, others)
    walk(block, stores)
    return stores.names


def _names_a_seed(targets: Sequence[cst.AssignTarget]) -> bool:
    """``seed = ...``, ``args.manualSeed = ...``, ``random_seed = ...``: the value is a seed
    (not ``seed_idx``, a draw of indices)."""
    name = (dotted(targets[0].target) or "").rsplit(".", 1)[-1].lower() if len(targets) == 1 \
        and isinstance(targets[0].target, (cst.Name, cst.Attribute)) else ""
    return name.endswith("seed")


def _names_an_address(node: cst.FormattedString) -> bool:
    """``f"tcp://localhost:{random.randrange(49152, 65535)}"``: a network address, whose draws
    only pick where processes meet (a data path's draws are not this)."""
    text = "".join(part.value for part in node.parts if isinstance(part, cst.FormattedStringText))
    return "://" in text or "localhost" in text or "127.0.0.1" in text


def _receiver_named(node: cst.BaseExpression, names_: tuple[str, ...]) -> bool:
    """``env.action_space`` or ``action_space``: a receiver by the name it is held under."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in names_
    return isinstance(node, cst.Name) and node.value in names_


def _partial_function(node: cst.BaseExpression, resolve: Any) -> cst.BaseExpression:
    """``functools.partial(train_step, lr=lr)`` runs ``train_step``: the function it wraps."""
    if isinstance(node, cst.Call) and node.args and resolve(dotted(node.func) or "") == "functools.partial":
        return node.args[0].value
    return node


def _loop_sets_environ(node: cst.For, resolve: Any) -> bool:
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Subscript(self, sub: cst.Subscript) -> None:
            nonlocal found
            if resolve(dotted(sub.value)) == "os.environ":
                found = True

        def visit_Call(self, call: cst.Call) -> None:
            nonlocal found
            if resolve(dotted(call.func)) in ENV_CALLS | {"os.environ.update"}:
                found = True

    walk(node.body, Finder())
    return found


def _mentions_version(test: cst.BaseExpression) -> bool:
    """`if tf.__version__ >= ...`, `if version.at_least("2.8")`, `if TF_VERSION < (2, 8)`: code
    written for one version range, which the version rules must not judge against another."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            nonlocal found
            if "version" in name.value.lower() or name.value.lower().endswith("vers"):
                found = True

    walk(test, Finder())
    return found


def _abstract(node: cst.FunctionDef) -> bool:
    """A method that only says its subclasses define it: ``@abstractmethod``, or a body (after
    its docstring) of ``raise NotImplementedError``."""
    if any((dotted(d.decorator) or "").rsplit(".", 1)[-1] == "abstractmethod" for d in node.decorators):
        return True
    body = list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else [node.body]
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    statement = body[0].body[0]
    if not isinstance(statement, cst.Raise) or statement.exc is None:
        return False
    exc = statement.exc.func if isinstance(statement.exc, cst.Call) else statement.exc
    return dotted(exc) == "NotImplementedError"

def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    has_name = any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
    has_main = any(isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides)
    return has_name and has_main and isinstance(test.comparisons[0].operator, cst.Equal)


def _syntax_error(source: str, path: str, exc: cst.ParserSyntaxError) -> tuple[str, int, int]:
    """Python's own wording and position where it has one (users know those), else libcst's."""
    try:
        quiet_compile(source, path)
    except SyntaxError as err:
        return f"syntax error: {err.msg}", err.lineno or 1, max((err.offset or 1) - 1, 0)
    except (ValueError, RecursionError, MemoryError):
        pass
    return f"syntax error: {exc.message}", exc.raw_line, max(exc.raw_column, 0)


def _called_from(facts: FileFacts, methods: tuple[str, ...]) -> set[str]:
    """The functions of this file that the methods named ``methods`` (``__getitem__``) call,
    directly or through one another (by name: ``self.load_image`` or ``load_mosaic``)."""
    todo = [scope for scope in facts.functions if scope.rsplit(".", 1)[-1] in methods]
    seen = set(todo)
    while todo:
        scope = todo.pop()
        for call in facts.calls:
            if call.scope != scope:
                continue
            head, _, rest = call.target.partition(".")
            # self.load_image() is a method of the calling class; load_mosaic() a function of the file
            found = f"{scope.split('.')[0]}.{rest}" if head == "self" and "." not in rest else \
                (call.target if not rest else None)
            if found in facts.functions and found not in seen:
                seen.add(found)
                todo.append(found)
    return seen - {scope for scope in facts.functions if scope.rsplit(".", 1)[-1] in methods}


def _looked_up_by_name(value: cst.BaseExpression) -> bool:
    """Is ``value`` (either side of a conditional) a module-level name looked up at run time:
    ``eval(name)``, ``globals()[name]``, ``vars()[name]``?"""
    if isinstance(value, cst.IfExp):
        return _looked_up_by_name(value.body) or _looked_up_by_name(value.orelse)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "eval":
        return bool(value.args) and not isinstance(value.args[0].value, (cst.SimpleString, cst.ConcatenatedString))
    return isinstance(value, cst.Subscript) and isinstance(value.value, cst.Call) \
        and isinstance(value.value.func, cst.Name) and value.value.func.value in ("globals", "vars") \
        and not value.value.args


def _last_method(node: cst.BaseExpression) -> Optional[str]:
    """``minimize`` for ``opt.minimize(loss)`` and ``tf.train.AdamOptimizer(1e-3).minimize(loss)``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    return None


def collect(kb: KnowledgeBase, path: str, source: str, links: Optional[dict[str, str]] = None) -> FileFacts:
    """Parse ``source`` once and return its facts (or the parse error, as DET001 material).
    ``links`` says what names taken from project modules are (see ``Collector``)."""
    facts = FileFacts(path=path)
    facts.noqa, facts.file_noqa = parse_noqa(source)
    try:
        module = stand_ins.parse_module(source)  # libcst, lenient where only libcst objects
    except cst.ParserSyntaxError as exc:
        # Python 3.6 code (`x.cuda(async=True)`), or Python 2 (`print "step", i`)
        old = stand_ins.keywords_as_names(source) or python2.python3_text(source)
        try:
            module = stand_ins.parse_module(old[0]) if old is not None else None
        except Exception:  # the stand-in did not help: the first error is the one to report
            module = None
        if module is None or old is None:
            facts.error, facts.error_line, facts.error_col = _syntax_error(source, path, exc)
            return facts
        facts.legacy, facts.legacy_line, facts.legacy_col = old[1], old[2], old[3]
        source = old[0]
    except Exception as exc:  # libcst raises a few other types on odd input
        facts.error = f"cannot parse: {exc}"
        return facts
    walk(module, Collector(kb, facts, source, links, positions(module)))
    return facts
