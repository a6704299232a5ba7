"""Outlines: a program follows deep imports by a text scan and parses only modules that can matter."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import make_linter
from detlint.lint.cache import FactsCache
from detlint.lint.ftypes import LOCAL_FRAMEWORK, LOCAL_FUNCTION
from detlint.knowledge.kb import load
from detlint.lint.programs.links import OutlineExports
from detlint.lint.names import EXTERNAL_MODULES
from detlint.lint.programs.outline import Outline, kb_tokens, outline, outline_from_json, outline_to_json

KB = load()
TOKENS = kb_tokens(KB)
EXTERNAL = EXTERNAL_MODULES | {"tensorflow", "keras"}


def sketch(text: str) -> Outline:
    return outline(textwrap.dedent(text), TOKENS, EXTERNAL)


@pytest.mark.parametrize("text", [
    '"""A module.\n\nUsage: import this (it does nothing)\n"""\nimport os\nfrom .a import b\n',
    "def f():\n    tf.random.set_seed(1)\n\n\nclass A(Base):\n    def __init__(self):\n        super().__init__()\n",
    "X = 3\nNAMES = {'a': 1}\n__all__ = ['f']\nVariable = OtherVariable\n",
    "if TYPE_CHECKING:\n    from .m import T\n",
    "if __name__ == '__main__':\n    tf.random.set_seed(1)\n    main()\n",
    "if 'HOME' in os.environ:\n    HOME = os.environ['HOME']\n",
    "def helper():\n    return 1\n\n\nVALUE = helper()\n",
    "for_each = 1\nCACHE = {}\nCACHE['k'] = 2\n",
    "if flag:\n    class Variable(Base):\n        def read(self):\n            return tf.random.shuffle(self.x)\n",
])
def test_module_levels_that_cannot_matter(text: str) -> None:
    assert not sketch(text).active


@pytest.mark.parametrize("text", [
    "import tensorflow as tf\ntf.random.set_seed(1)\n",
    "import os\nos.environ['TF_DETERMINISTIC_OPS'] = '1'\n",
    "import os\nos.environ.update({'A': '1'})\n",
    "def seed_all():\n    random.seed(0)\n\n\nseed_all()\n",
    "def outer():\n    inner()\n\n\ndef inner():\n    np.random.seed(0)\n\n\nouter()\n",
    "for name in names:\n    register(name)\n",
    "options = tf.data.Options()\noptions.deterministic = False\n",
    "model = tf.keras.Sequential([\n    tf.keras.layers.Dense(2),\n])\n",
    "try:\n    tf.config.experimental.enable_op_determinism()\nexcept AttributeError:\n    pass\n",
])
def test_module_levels_that_may_matter(text: str) -> None:
    assert sketch(text).active


def test_imports_and_their_lines() -> None:
    found = sketch("""\
        import os, numpy as np
        from .seeding import (
            seed_all,
            other as o,
        )
        from pkg.models import *
        def f():
            import pkg.late
        """)
    assert found.imports == (("os", 1), ("numpy", 1), (".seeding.seed_all", 2), (".seeding.other", 2),
                             ("pkg.models", 6), ("pkg.late", 8))


def test_calls_of_imported_names_are_left_to_the_program() -> None:
    found = sketch("from .utils import setup\nfrom numpy import zeros\nsetup()\nA = zeros(3)\n")
    assert not found.active and found.calls == (".utils.setup",)


def test_cached_outlines_round_trip_and_bad_entries_are_misses(tmp_path: Path) -> None:
    original = sketch("from .utils import setup\nsetup()\n")
    assert outline_from_json(outline_to_json(original)) == original
    cache = FactsCache(tmp_path, "kb")
    key = cache.key(tmp_path / "m.py", b"x")
    cache.put_outline(key, original)
    assert cache.get_outline(key) == original
    stored = cache._file(key).with_suffix(".outline.json")
    for bad in (b"[]", b'{"imports": [["a", "1"]], "active": false, "mentions": [], "calls": []}',
                b'{"imports": [], "active": 1, "mentions": [], "calls": []}', b"{", b"[" * 100000):
        stored.write_bytes(bad)
        assert cache.get_outline(key) is None


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


PACKAGE = {
    "pyproject.toml": "",
    "pkg/__init__.py": "from .models import build\nfrom .data import load\nfrom . import extras\n",
    "pkg/extras/__init__.py": "from .plots import show\n",
    "pkg/extras/plots.py": "import numpy as np\n\n\ndef show(x):\n    return np.random.permutation(x)\n",
    "pkg/models/__init__.py": "from .net import build\n",
    "pkg/models/net.py": """\
        import tensorflow as tf


        def build():
            return tf.keras.Sequential([tf.keras.layers.Dense(2)])
        """,
    "pkg/data.py": "import numpy as np\n\n\ndef load():\n    return np.zeros((4, 2)), np.zeros((4, 2))\n",
    "train.py": """\
        import pkg
        from pkg import build, load

        x, y = load()
        model = build()
        model.compile("sgd", "mse")
        model.fit(x, y)
        """,
}


def test_inert_modules_deep_in_a_package_are_not_parsed(tmp_path: Path) -> None:
    write(tmp_path, PACKAGE)
    linter = make_linter("2.21", root=tmp_path)
    diags = linter.run([tmp_path / "train.py"]).diagnostics
    assert {d.code for d in diags} == {"DET101"}  # the Dense layer in pkg/models/net.py, reached by the call
    parsed = {p.relative_to(tmp_path.resolve()).as_posix() for p in linter._facts}
    # pkg/__init__.py is the entry's own import and, with pkg/models/__init__.py, passes the calls
    # on; pkg/extras only imports and defines: outlined, never parsed
    assert parsed == {"train.py", "pkg/__init__.py", "pkg/models/__init__.py", "pkg/models/net.py", "pkg/data.py"}


def test_a_deep_module_that_seeds_at_import_still_counts(tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["pkg/extras/__init__.py"] = "import keras\n\nfrom .plots import show\n\nkeras.utils.set_random_seed(1)\n"
    write(tmp_path, files)
    linter = make_linter("2.21", root=tmp_path)
    assert linter.run([tmp_path / "train.py"]).diagnostics == []


def test_a_deep_module_calling_a_project_function_at_import_is_parsed(tmp_path: Path) -> None:
    files = dict(PACKAGE)
    files["pkg/extras/__init__.py"] = "from .plots import show\nfrom ..seeding import seed_all\n\nseed_all()\n"
    files["pkg/seeding.py"] = "import keras\n\n\ndef seed_all():\n    keras.utils.set_random_seed(1)\n"
    write(tmp_path, files)
    linter = make_linter("2.21", root=tmp_path)
    assert linter.run([tmp_path / "train.py"]).diagnostics == []


def test_a_project_that_is_a_package_imports_itself_by_name(tmp_path: Path) -> None:
    """`from mypkg import model` in mypkg/train.py, with mypkg/ the project root (a repository
    that is the package itself): the module is the project's own."""
    root = tmp_path / "mypkg"
    write(root, {
        "pyproject.toml": "",
        "__init__.py": "",
        "model.py": "import tensorflow as tf\n\n\ndef build():\n    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
        "train.py": "import numpy as np\nfrom mypkg import model\n\nnet = model.build()\nnet.compile('sgd', 'mse')\n"
                    "net.fit(np.zeros((2, 2)), np.zeros((2, 1)))\n",
    })
    diags = make_linter("2.21", root=root).run([root / "train.py"]).diagnostics
    assert [(d.line, d.code) for d in diags] == [(4, "DET101")]
    assert "(in model.py:5)" in diags[0].message
    # without __init__.py still the project's own: a namespace package run from the folder above
    # (`python -m mypkg.train`); an installed package of the checkout's own name and modules
    # would be this code anyway (another name is not followed: test_program_shapes.py)
    (root / "__init__.py").unlink()
    assert [(d.line, d.code) for d in make_linter("2.21", root=root).run([root / "train.py"]).diagnostics] \
        == [(4, "DET101")]


def test_bindings_say_how_a_module_binds_what_others_take_from_it() -> None:
    found = dict(sketch("""\
        import tensorflow as tf
        from .base import Backbone
        if BACKEND == "tf":
            from .tf_layer import Layer
        else:
            from .torch_layer import Layer
        from .helpers import *
        keras = tf.keras
        SIZE, NAME = 3, "x"
        DEFAULT = None


        class Net(Backbone, metaclass=Meta):
            pass


        class Plain:
            pass


        def build():
            return Net()


        def Unet():
            return Net()


        def helper():
            pass


        helper = wrap(helper)
        """).bindings)
    assert found["tf"] == "<tensorflow"
    assert found["Layer"] == "<.tf_layer.Layer|.torch_layer.Layer"  # a backend switch: either
    assert found["*"] == "<.helpers"
    assert found["keras"] == "="  # an alias: the module's walk says what it is
    assert found["SIZE"] == found["NAME"] == found["DEFAULT"] == "~"  # values: never a class or alias
    assert found["Net"] == "(Backbone" and found["Plain"] == "("
    assert found["build"] == found["Unet"] == "def"  # functions (a Capitalised one is a factory)
    assert found["helper"] == "="  # bound again: the walk says what it is


MODEL_PACKAGE = {
    "pyproject.toml": "",
    "zoo/__init__.py": "from .models import Net, describe\n",
    "zoo/models/__init__.py": "from .net import Net\nfrom .text import describe\n",
    "zoo/models/net.py": """\
        from ..blocks import Block
        from ..layers.base import Base


        class Net(Block):
            def __init__(self):
                super().__init__()
        """,
    "zoo/models/text.py": "def describe(model):\n    return str(model)\n",
    "zoo/blocks.py": "from .layers.base import Base\n\n\nclass Block(Base):\n    pass\n",
    "zoo/layers/__init__.py": "",
    "zoo/layers/base.py": """\
        import tensorflow as tf


        class Base(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.dense = tf.keras.layers.Dense(2)
        """,
    "train.py": """\
        import numpy as np
        from zoo import Net, describe

        model = Net()
        model.compile("sgd", "mse")
        model.fit(np.zeros((4, 2)), np.zeros((4, 2)))
        print(describe(model))
        """,
}


def test_a_model_class_reexported_by_a_package_is_told_from_outlines(tmp_path: Path) -> None:
    """``Net`` reaches tf.keras.Model through two re-exports and two base classes in other
    modules: the outlines say so without a parse, and the program sees a Keras model."""
    write(tmp_path, MODEL_PACKAGE)
    linter = make_linter("2.21", root=tmp_path)
    guess = OutlineExports(linter._known_exports, linter.outline_of, linter.builder.resolver,
                           KB.groups["frameworks"].imports)
    package = (tmp_path / "zoo" / "__init__.py").resolve()
    assert guess.export_of(package, "Net") == (True, LOCAL_FRAMEWORK)
    assert guess.export_of(package, "describe") == (True, None)  # a function: nothing to link
    assert linter._facts == {}  # told from outlines alone
    diags = linter.run([tmp_path / "train.py"]).diagnostics
    assert [(d.code, d.line) for d in diags] == [("DET101", 4)]  # its Dense initialiser, unseeded


def test_a_plain_class_from_a_package_is_no_model(tmp_path: Path) -> None:
    files = dict(MODEL_PACKAGE)
    files["zoo/layers/base.py"] = "class Base:\n    def fit(self, x, y):\n        return self\n\n    def compile(self, *a):\n        pass\n"
    write(tmp_path, files)
    diags = make_linter("2.21", root=tmp_path).run([tmp_path / "train.py"]).diagnostics
    assert diags == []


FACTORIES = """\
    import tensorflow as tf


    def Unet(n):
        return tf.keras.Sequential([tf.keras.layers.Dense(n)])


    def build(n):
        return Unet(n)


    Wrapped = keep(Unet)
    Palette = ["red", "green"]
    BATCH_SIZE = 32


    class Plain:
        pass
    """


def test_outlines_and_parses_agree_on_which_names_are_factories(tmp_path: Path) -> None:
    """A Capitalised function or a name bound to what a call made is a factory; a literal, a
    constant, a class or a lower-case function is not. The outline (no parse) and the module's
    own walk give the same answer, so the links, and what the importer sees, do not depend on
    which of the two was at hand."""
    write(tmp_path, {"nets.py": FACTORIES})
    linter = make_linter("2.21", root=tmp_path)
    module = (tmp_path / "nets.py").resolve()
    guess = OutlineExports(linter._known_exports, linter.outline_of, linter.builder.resolver,
                           KB.groups["frameworks"].imports)
    from_outline = guess.factories(module)
    assert sorted(from_outline or []) == ["Unet", "Wrapped"]
    facts = linter.facts_of(module)
    assert sorted(n for n, t in facts.exports.items() if t == LOCAL_FUNCTION) == ["Unet", "Wrapped"]


REEXPORTED_FACTORY = {
    "zoo/__init__.py": "from .nets import Unet\nfrom zoo.more import Resnet\nfrom .caps import DIN\n",
    "zoo/caps.py": FACTORIES.replace("Unet", "DIN"),
    "zoo/nets.py": FACTORIES,
    "zoo/more.py": FACTORIES.replace("def Unet(", "def Resnet(").replace("return Unet(n)", "return Resnet(n)")
                                  .replace("keep(Unet)", "keep(Resnet)"),
    "train.py": """\
        import numpy as np
        from zoo import NAME

        model = NAME(2)
        model.compile("sgd", "mse")
        model.fit(np.zeros((4, 2)), np.zeros((4, 2)))
        """,
}


@pytest.mark.parametrize("name", ["Unet", "Resnet", "DIN"])
def test_a_factory_a_package_re_exports_is_one_whether_the_package_is_parsed_or_outlined(
        tmp_path: Path, name: str) -> None:
    """``from .nets import Unet`` (or an absolute import; or ``DIN``, an all-capitals function, no
    constant) in a package's ``__init__``: the program
    that calls ``zoo.Unet(2)`` trains what the factory builds, and says so the same way whether
    the package was only outlined (the program alone is checked) or parsed in full (the package
    is checked too, as ``detlint .`` does)."""
    files = dict(REEXPORTED_FACTORY)
    files["train.py"] = files["train.py"].replace("NAME", name)
    write(tmp_path, files)
    alone = make_linter("2.21", root=tmp_path).run([tmp_path / "train.py"]).diagnostics
    assert [(d.code, d.line) for d in alone] == [("DET101", 4)]
    linter = make_linter("2.21", root=tmp_path)
    both = linter.run([tmp_path / "zoo" / "__init__.py", tmp_path / "train.py"]).diagnostics
    assert [(Path(d.path).name, d.code, d.line) for d in both] == [("train.py", "DET101", 4)]
    package = (tmp_path / "zoo" / "__init__.py").resolve()
    assert linter.facts_of(package).exports[name] == LOCAL_FUNCTION
