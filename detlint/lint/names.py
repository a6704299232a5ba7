"""Canonical spellings of framework names, so one knowledge-base entry covers every alias."""
from __future__ import annotations

import re
import sys
from functools import lru_cache

# Prefixes that name the same Keras API. ``tf.keras`` is Keras 2 or 3 depending on the
# TensorFlow version; the version model, not the name, decides which.
_KERAS_PREFIXES = (
    "tensorflow.compat.v1.keras.", "tensorflow.compat.v2.keras.", "tensorflow.python.keras.",
    "tensorflow.keras.", "tf_keras.", "keras.src.", "keras.api.",
)
# top-level packages that are never a project's own code (their calls are not followed)
EXTERNAL_MODULES = frozenset(getattr(sys, "stdlib_module_names", ())) | {"numpy", "pandas", "scipy", "sklearn",
                                                                        "matplotlib", "absl", "torch", "jax"}
_KERAS_SUBMODULES = {  # keras.layers.core.Dense -> keras.layers.Dense
    "keras.layers.core.": "keras.layers.", "keras.layers.convolutional.": "keras.layers.",
    "keras.layers.pooling.": "keras.layers.", "keras.layers.recurrent.": "keras.layers.",
    "keras.layers.embeddings.": "keras.layers.",
}


@lru_cache(maxsize=65536)
def candidates(qualname: str) -> tuple[str, ...]:
    """Names to look up for ``qualname``, most specific first."""
    name = qualname
    if name.startswith("tensorflow.compat.v2."):
        name = "tensorflow." + name[len("tensorflow.compat.v2."):]
    for prefix in _KERAS_PREFIXES:
        if name.startswith(prefix):
            name = "keras." + name[len(prefix):]
            break
    for prefix, replacement in _KERAS_SUBMODULES.items():
        if name.startswith(prefix):
            name = replacement + name[len(prefix):]
            break
    out = [name]
    if name.startswith("tensorflow.compat.v1."):
        # most v1 names are also the v2 names (tf.compat.v1.nn.conv2d ~ tf.nn.conv2d)
        out.append("tensorflow." + name[len("tensorflow.compat.v1."):])
    elif name.startswith("tensorflow.") and not name.startswith("tensorflow.compat."):
        # TF1 code writes tf.image.resize_images, which TF2 keeps as tf.compat.v1.image.resize_images
        out.append("tensorflow.compat.v1." + name[len("tensorflow."):])
    return tuple(out)


def pretty(qualname: str) -> str:
    """How a user writes the name: ``tf.nn.conv2d``, ``np.random.seed``."""
    for full, short in (("tensorflow.", "tf."), ("numpy.", "np.")):
        if qualname.startswith(full):
            return short + qualname[len(full):]
    return qualname


def member(module: str, name: str) -> str:
    """``name`` in ``module`` as an import spells it: ``ops.conv``, ``.ops.conv``, ``..conv``."""
    return f"{module}{name}" if not module or module.endswith(".") else f"{module}.{name}"


def within(name: str, prefix: str) -> bool:
    """``name`` is ``prefix`` or inside it; ``transformers.TF*`` is any name that starts so."""
    if prefix.endswith("*"):
        return name.startswith(prefix[:-1])
    return name == prefix or name.startswith(prefix + ".")


def factory_name(name: str, function: bool = False) -> bool:
    """Capitalised like a class (``Unet``, ``ResNet50``), not a constant (``BATCH_SIZE``): a
    project function or call result of such a name is a factory, not a constructor. A
    ``def`` is never a constant: an all-capitals function (``def DIN(...)``) is one too."""
    return name[:1].isupper() and (function or not name.isupper())


# names for test or validation data (``test_dataset``, ``x_val``, ``ds_eval``, ``testloader``): what
# is bound to them only evaluates, so its order and draws never reach the weights
EVALUATION_NAME = re.compile(r"(?:^|_)(?:test|val|valid|validation|eval|evaluation|dev|holdout)(?:_|\d|$)"
                             r"|^(?:test|val|valid|eval)(?:loader|set|data|dataset|ds|iter|batches|gen|generator)s?$",
                             re.IGNORECASE)
TRAIN_WORD = re.compile(r"(?:^|_)train", re.IGNORECASE)
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def evaluation_name(name: str) -> bool:
    """A name for test or validation data only (``test_loader``, ``x_val``), not one that also
    says it trains (``train_val_loader``: training on the train and validation splits).
    camelCase words count as separate (``testDataLoader``, ``valSet``)."""
    words = CAMEL_BOUNDARY.sub("_", name)
    return bool(EVALUATION_NAME.search(words)) and not TRAIN_WORD.search(words)


# a command-line command named for anything but training (``python main.py test``)
NOT_TRAINING_COMMAND = re.compile(r"^(?:evaluate|predict|infer|inference|generate|sample|demo|visuali[sz]e|plot|"
                                  r"export|convert|help|show|download|prepare|preprocess)(?:_|$)", re.IGNORECASE)


def evaluation_command(name: str) -> bool:
    """A command (a function the command line picks: fire.Fire()) that evaluates, infers or
    prepares: it trains nothing (``test``, ``evaluate``, ``predict``, ``help``)."""
    return evaluation_name(name) or bool(NOT_TRAINING_COMMAND.search(name)) and not TRAIN_WORD.search(name)
