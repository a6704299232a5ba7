"""Plain data types shared by the engine, the outputs and the flake8 adapter."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Optional

# many of these are kept per file: slots halve their memory (Python >= 3.10)
SLOTS: dict[str, Any] = {"slots": True} if sys.version_info >= (3, 10) else {}


def quiet_compile(source: str, filename: str) -> None:
    """compile() to check syntax, without printing the user's SyntaxWarnings ("is" with a literal)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(source, filename, "exec", dont_inherit=True)


class Unknown:
    """A value the linter cannot know statically (a variable, a call result)."""

    _instance: Optional["Unknown"] = None

    def __new__(cls) -> "Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()
# what a module exports as a project class deriving from a framework class (keras.Model)
LOCAL_FRAMEWORK = "<local framework class>"
LOCAL_OTHER = "<local class>"  # an object of a project class that derives from no framework class
# ... and as a project function with a Capitalised name (``def Unet(...)``, a model factory): a
# call of it is not a constructor, whatever its name looks like
LOCAL_FUNCTION = "<local function>"
# ... and as a project function every return of which makes one framework class, followed by
# that class (``"<returns> tensorflow.estimator.Estimator"``): a call of it makes such an object
LOCAL_RETURNS = "<returns> "


@dataclass(frozen=True)
class Ref:
    """A dotted name used as a value, e.g. ``tf.image.ResizeMethod.NEAREST_NEIGHBOR``."""

    name: str


@dataclass(frozen=True, **SLOTS)
class Hit:
    """One place in a file where a knowledge-base matcher matched.

    ``owner`` is ``rule:DET105``, ``group:tf-seeders`` or ``op:TF-BINCOUNT``; ``index`` is the
    matcher's position in that owner's list. Hits do not depend on the target version, so they
    can be cached; version conditions are applied when rules are evaluated.
    """

    owner: str
    index: int
    api: str
    line: int
    col: int
    end_line: int
    end_col: int
    scope: Optional[str]
    detail: str = ""
    arg_ref: Optional[str] = None  # a function passed to the matched call, by name
    arg_span: Optional[tuple[int, int, int, int]] = None  # or a lambda, by position
    version_guarded: bool = False  # inside `if <something about a version>:` (either branch)
    # where a finding points when not at the node's start: the method name of a chained call,
    # the keyword argument that made the match (so `# noqa` on that line works)
    at: Optional[tuple[int, int, int, int]] = None
    displayed: bool = False  # only printed or plotted (an argument of a display call)
    # in a branch a run with default command-line options never takes (`if args.seed is not None:`
    # with --seed defaulting to None): a seed or switch there is no provider for the default run
    off_by_default: bool = False
    # in a method a data loader's workers run (a torch dataset's __getitem__): the main process's
    # draw only where the program itself runs that method (a loader without workers, a direct call)
    worker_side: bool = False
    # a test of the enclosing function's parameters that must hold for the match (a form,
    # flow/option_forms.py): ``nn.Upsample(mode=mode)`` matches where a caller passes "bilinear"
    needs: Optional[list[Any]] = field(default=None, compare=False)  # a list: kept out of the hash

    @property
    def span(self) -> tuple[int, int, int, int]:
        """The reported place: ``at``, else the matched node."""
        return self.at or (self.line, self.col, self.end_line, self.end_col)


@dataclass(frozen=True, **SLOTS)
class CallSite:
    """A call (or a function passed as an argument) that may run project code."""

    target: str
    line: int
    col: int
    scope: Optional[str]
    # it runs where no gradient is taken: an inference branch (`else:` of `if training:`), a
    # `training=False` call, or inside a gradient stop (`tf.stop_gradient(f(x))`)
    no_grad: bool = False
    # ... and of those, only outside training (the first two): what it runs is no training code
    inference: bool = False
    # outside any tape block, lambda or nested def: at module level (or in a function only such
    # calls run) of a file that takes its gradients only with tapes and builds no model there,
    # it runs eagerly and nothing a tape would record
    untaped: bool = False
    # a function handed to a runner that returns it transformed (``update = jax.jit(_update)``):
    # it runs where the result is called
    deferred: bool = False
    # inside a device scope that places it on the CPU (``with tf.device("/cpu:0"):``)
    on_cpu: bool = False
    # the call's own result reaches no gradient: every use of it is detached or stopped
    # (``z = resample(...); z = z.detach()``), so what its callee returns is never differentiated
    # here (set only on the record of the callee, never on a function handed to the call)
    dropped: bool = False
    # the command-line option that names what a lookup by name calls (``getattr(models,
    # args.arch)(...)``: ``arch``): its default is the candidate a run with the defaults takes
    key: Optional[str] = None


def top_scope(scope: Optional[str]) -> str:
    """The top-level definition a hit's scope lies in: ``Trainer`` for ``Trainer.__init__``."""
    return (scope or "").split(".", 1)[0]


@dataclass
class FileFacts:
    """Everything one walk of one file yields; independent of the target version."""

    path: str
    hits: list[Hit] = field(default_factory=list)
    # hits in methods loader workers run (Hit.worker_side): walked only where a program runs them
    worker_hits: list[Hit] = field(default_factory=list)
    runtime: Optional[str] = None  # a notebook's saved accelerator (Colab's metadata: "TPU")
    calls: list[CallSite] = field(default_factory=list)
    functions: dict[str, int] = field(default_factory=dict)  # scope name -> line of its def
    classes: dict[str, list[str]] = field(default_factory=dict)  # class -> method names
    # class -> its base classes that may be project classes, qualified as the file imports them
    # (``base.BaseTrainer``) or as written for the file's own: a method it does not define is looked
    # up there, as Python does
    bases: dict[str, list[str]] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local alias -> qualified name
    import_lines: dict[str, int] = field(default_factory=dict)  # imported module -> first line
    relative_imports: list[tuple[int, str, int]] = field(default_factory=list)  # (level, module, line)
    star_imports: list[str] = field(default_factory=list)  # `from X import *`, X as written
    # folders its calls put on sys.path, relative to its own folder (flow/sys_path.py)
    path_folders: list[str] = field(default_factory=list)
    # what importers may take from this module: its names for framework modules and objects
    # (`tf`, `keras = tf.keras`), and its classes that derive from a framework class
    exports: dict[str, str] = field(default_factory=dict)
    frameworks: set[str] = field(default_factory=set)
    keras_flavours: set[str] = field(default_factory=set)
    main_guard: Optional[int] = None
    # module-level `name = ...` statements: (name, line, col, end_line, end_col), so a program
    # can tell which object a layer built there went into
    assigned: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    # (first line, last line) of each for/while loop: code after a training call in the same
    # loop runs before the next one
    loops: list[tuple[int, int]] = field(default_factory=list)
    # functions whose every returned value passes a gradient stop: nothing they compute is
    # differentiated through their results
    stopped: list[str] = field(default_factory=list)
    # functions that run what they decorate without autograd (a project `smart_inference_mode`),
    # and the decorators (last names) of this file's functions: gradients.py matches the two
    no_grad_decorators: list[str] = field(default_factory=list)
    decorators: dict[str, list[str]] = field(default_factory=dict)
    # top-level functions and classes without decorators whose name appears nowhere else in the
    # file: in a script no other file imports they never run, and a program whose entry is this
    # file never runs them (a `__main__` demo beside a Trainer class it never builds)
    unreferenced: list[str] = field(default_factory=list)
    # [line, col, X] of ops stored as `self.X = <op>` where X is named nowhere else in the file: a
    # module no code calls, if no other file of the project names X either
    lone_attributes: list[list[Any]] = field(default_factory=list)
    # class -> the last names of all its written bases (``object`` included): a class whose chain
    # holds no library class has no method a framework calls for it
    class_bases: dict[str, list[str]] = field(default_factory=dict)
    # [line, col, end_line, end_col, function, parameter, position] of parameter defaults: what a
    # default holds runs for nothing when every call of the function passes that parameter
    default_spans: list[list[Any]] = field(default_factory=list)
    # [line, col, end_line, end_col, class, attribute] of the bodies of `if self.X:` in methods
    flag_tests: list[list[Any]] = field(default_factory=list)
    # assignments in functions to names for test or validation data (``ds_val = ds.shuffle(..)``)
    evaluation_spans: list[tuple[int, int, int, int]] = field(default_factory=list)
    # branches a run with the default command-line options never takes (`if FLAGS.real_robot:`
    # with the flag off by default): what is imported or called there runs only on request
    off_default_spans: list[tuple[int, int, int, int]] = field(default_factory=list)
    # `with` statements that open a block of a scope group (`with tf.Graph().as_default():`),
    # by that group's name: a scoped provider reaches only the uses in its own block
    scopes: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    # the command-line options the file defines, with their defaults (values a cache keeps), and
    # those it assigns (`args.seed = ...`: no longer the default); tests of options this file does
    # not define: [form, body span, else span or None, span after it when its body returns or None]
    # (flow/default_branches.py), decided per program
    options: dict[str, Any] = field(default_factory=dict)
    options_set: list[str] = field(default_factory=list)
    option_tests: list[list[Any]] = field(default_factory=list)
    # function -> its parameters [name, position (-1 keyword-only, self not counted), default
    # form or None]; "line:col" of a call that may run project code -> its arguments [keyword or
    # "" ("*" for a starred one), position or -1, form or None]: a test of a parameter is decided
    # by what the caller passes
    params: dict[str, list[list[Any]]] = field(default_factory=dict)
    call_args: dict[str, list[list[Any]]] = field(default_factory=dict)
    # .yaml/.yml names given to calls or as options' defaults: configurations the program loads
    # (programs/config_files.py reads their values as option defaults)
    config_files: list[str] = field(default_factory=list)
    # functions run as tf.data stages through project helpers (flow/handed_functions.py):
    # function -> [parameter, position] that reach a stage; [function, parameter, its position,
    # callee, keyword, position] handed on; [callee, keyword, position, function or "", span] handed over
    stage_params: dict[str, list[list[Any]]] = field(default_factory=dict)
    param_handed: list[list[Any]] = field(default_factory=list)
    handed: list[list[Any]] = field(default_factory=list)
    # functions that make objects (a class called: layers, models) or train: what they run may
    # be differentiated later, wherever they are called (see CallSite.untaped)
    builders: list[str] = field(default_factory=list)
    # how the file takes gradients and where it builds models: "tape" (it opens a GradientTape),
    # "other gradients" (minimize, tf.gradients, a loss collection), "module model" (its
    # module-level code builds a Keras model: ops there run on symbolic tensors)
    gradient_style: list[str] = field(default_factory=list)
    # (line, col, parameter) of rule hits whose problem value would come from a parameter whose
    # default is safe and that no call of this file passes by keyword: if no other file of the
    # project names it either, the default is what runs
    safe_defaults: list[tuple[int, int, str]] = field(default_factory=list)
    # lines binding a model whose backward never runs: every call of its name is without autograd,
    # or a loop freezes all its parameters (flow/frozen_models.py)
    frozen_bindings: list[int] = field(default_factory=list)
    # (a line binding a model a loop freezes by parameter name, all but some: the loop's line)
    partly_frozen: list[tuple[int, int]] = field(default_factory=list)
    # function -> the project functions and classes it returns as values (a factory choosing a
    # model class): calling its result runs one of them
    returns: dict[str, list[str]] = field(default_factory=dict)
    # function -> the framework class every return of it makes (``return tf.estimator.Estimator(
    # model_fn, config=config)``): what calling it gives, as the constructor would
    made_types: dict[str, str] = field(default_factory=dict)
    # (line, col) of ops whose value feeds no gradient target of their block (gradients.py)
    off_gradient: list[tuple[int, int]] = field(default_factory=list)
    # module-level dicts of project functions (`MODELS = {"unet": unet}`, `MODELS["fcn"] = fcn.fcn_8`):
    # a call `MODELS[name](...)` may run any of them
    tables: dict[str, list[str]] = field(default_factory=dict)
    # registries a decorator fills (`_MODELS[name] = cls` inside `register_model`): table -> the
    # functions of this file that write it; and what this file's decorators register: decorator
    # (qualified as written) -> the top-level classes and functions it decorates
    registrars: dict[str, list[str]] = field(default_factory=dict)
    registered: dict[str, list[str]] = field(default_factory=dict)
    # methods with no body of their own ("Cls.method": only `raise NotImplementedError`, or an
    # @abstractmethod): a call of one runs a subclass's override
    abstract: list[str] = field(default_factory=list)
    # "Cls.attr" -> [parameter, position after self ("" keyword-only)]: what __init__ keeps of
    # what it is given (self.netD = netD); "line:col" of a call of a project class -> the project
    # classes of its arguments ["netD=pkg.nets.Discriminator", "#0=Generator"]
    kept_params: dict[str, list[str]] = field(default_factory=dict)
    arg_types: dict[str, list[str]] = field(default_factory=dict)
    noqa: dict[int, Optional[frozenset[str]]] = field(default_factory=dict)
    file_noqa: bool = False
    error: Optional[str] = None
    error_line: int = 1
    error_col: int = 0
    # checked with a stand-in (lint/stand_ins.py) for syntax this Python rejects but the code's
    # own Python accepted (``x.cuda(async=True)`` before 3.7): reported as DET001, rest checked
    legacy: Optional[str] = None
    legacy_line: int = 1
    legacy_col: int = 0


@dataclass
class Edit:
    """A text replacement for a fix (1-based lines, 0-based columns, end exclusive)."""

    line: int
    col: int
    end_line: int
    end_col: int
    content: str


@dataclass
class Diagnostic:
    code: str
    message: str
    path: str
    line: int
    col: int  # 0-based, as libcst and flake8 expect
    end_line: int
    end_col: int
    name: str = ""
    fix_title: Optional[str] = None
    fix_safety: Optional[str] = None
    edits: list[Edit] = field(default_factory=list)
    cell: Optional[int] = None
    # what --fix does: the knowledge base's fix entry for the target version, merged with the
    # matched pattern's override; plus, for program fixes that rewrite calls, where those calls are
    fix_spec: Optional[dict[str, Any]] = None
    rewrite_sites: list[tuple[str, tuple[int, int, int, int], str]] = field(default_factory=list)
    # the matched node a fix acts on, where the finding points elsewhere (a method name, a keyword)
    target: Optional[tuple[int, int, int, int]] = None
    # how sure detlint is (lint/confidence.py): certain, likely or possible, and why not certain
    confidence: str = "certain"
    unsure: str = ""

    @property
    def target_span(self) -> tuple[int, int, int, int]:
        return self.target or (self.line, self.col, self.end_line, self.end_col)

    def sort_key(self) -> tuple[Any, ...]:
        return (self.path, self.cell or 0, self.line, self.col, self.code)
