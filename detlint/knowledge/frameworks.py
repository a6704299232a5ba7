"""The frameworks detlint knows, each with the releases its knowledge base describes.

Everything version-keyed in the knowledge base belongs to one framework: the rules under
``rules/<key>/`` are read with that framework's version. A run resolves one target version per
framework (``settings/config.py``); nothing else in the engine names a framework.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Framework:
    key: str  # as folders, settings and messages name it: "torch"
    title: str  # "PyTorch"
    # every minor release the knowledge base describes, oldest first, and the patch releases that
    # changed what a minor release does ("0.4.29": from it to the next one listed)
    releases: tuple[str, ...]
    # the distributions that install it (pins and installed metadata are read for these)
    distributions: tuple[str, ...]
    option: str  # the command-line option: "--torch-version"
    setting: str  # the [tool.detlint] key: "torch-version"
    # said when a pin is older than every known release
    before_oldest: str = ""
    # does a floor-only pin (``>=1.12``) say which version the code is for? For TensorFlow it
    # marks an era (TF1 graph code pinned >=1.12 cannot run on TF 2); PyTorch's API has been
    # stable since 1.0, so ``torch>=0.4`` is only a minimum that today's releases meet
    floor_is_era: bool = True
    # the imports that start it: environment settings it reads at start-up go before the first
    # of these (``before-<key>-import`` fixes)
    starts: tuple[str, ...] = ()
    # the top-level modules whose import makes a file this framework's code: only such files are
    # evidence of its era (``SGD(params, lr=...)`` in a PyTorch file says nothing about Keras)
    imports: tuple[str, ...] = ()
    # whose kernels its training runs (Lightning trains with PyTorch's)
    kernels_of: str = ""


FRAMEWORKS: dict[str, Framework] = {
    "tensorflow": Framework(
        key="tensorflow", title="TensorFlow",
        releases=("1.13", "1.14", "1.15", *(f"2.{minor}" for minor in range(0, 22))),
        distributions=("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tensorflow-macos",
                       "tensorflow-intel", "tensorflow-aarch64"),
        option="--tf-version", setting="tensorflow-version",
        before_oldest="where TensorFlow has no GPU determinism switch", starts=("tensorflow",),
        # and the libraries that import it to run (a JAX program's tensorflow_datasets input
        # pipeline runs TensorFlow); not tensorflow_probability, which also runs on JAX
        imports=("tensorflow", "keras", "tf_keras", "tensorflow_datasets", "tensorflow_hub", "tensorflow_addons",
                 "tensorflow_text")),
    "torch": Framework(
        key="torch", title="PyTorch",
        # 1.7 brought the determinism switch (set_deterministic); 1.8 renamed it. Before 1.7 only
        # cuDNN's flags exist; 0.4 code is checked as 1.0 (neither has the switch)
        releases=(*(f"1.{minor}" for minor in range(0, 14)), *(f"2.{minor}" for minor in range(0, 16))),
        distributions=("torch", "pytorch"),  # pytorch: its conda package (environment.yml)
        option="--torch-version", setting="torch-version",
        before_oldest="where PyTorch has no determinism switch", floor_is_era=False, starts=("torch",),
        imports=("torch",)),
    # what Trainer(deterministic=True) turns on changed in 1.5: cuDNN's flag before, torch's switch after
    "lightning": Framework(
        key="lightning", title="PyTorch Lightning",
        releases=(*(f"1.{minor}" for minor in range(0, 10)), *(f"2.{minor}" for minor in range(0, 7))),
        distributions=("lightning", "pytorch-lightning"),
        option="--lightning-version", setting="lightning-version", floor_is_era=False,
        imports=("lightning", "pytorch_lightning"), kernels_of="torch"),
    # JAX's API is keyed by jax's minor release (0.4 spanned 2022-2024); jaxlib carries XLA and
    # is released in step with it, and changed its determinism within 0.4: 0.4.29 brought
    # --xla_gpu_exclude_nondeterministic_ops, 0.4.36 a deterministic max-pool gradient. XLA reads XLA_FLAGS when the backend starts: a program may
    # import the libraries built on JAX (Flax, Optax, Keras on JAX) before it sets them
    "jax": Framework(
        key="jax", title="JAX",
        releases=(*(f"0.{minor}" for minor in range(1, 5)), "0.4.29", "0.4.36", *(f"0.{minor}" for minor in range(5, 11))),
        distributions=("jax", "jaxlib"),
        option="--jax-version", setting="jax-version", floor_is_era=False,
        starts=("jax", "flax", "optax", "equinox", "haiku", "orbax", "keras"),
        imports=("jax", "jaxlib", "flax", "optax", "equinox", "haiku")),
}
DEFAULT_FRAMEWORK = "tensorflow"  # rules directly under rules/ (a project's own, older layout)


def before_import(where: str) -> tuple[str, ...]:
    """The modules a ``before-<key>-import`` fix goes above (``before-tf-import`` names TensorFlow)."""
    key = where.removeprefix("before-").removesuffix("-import")
    key = "tensorflow" if key == "tf" else key
    return FRAMEWORKS[key].starts if key in FRAMEWORKS and where.startswith("before-") else ()


def framework(key: str) -> Framework:
    try:
        return FRAMEWORKS[key]
    except KeyError:
        raise KeyError(f"unknown framework {key!r}; known: {', '.join(FRAMEWORKS)}") from None
