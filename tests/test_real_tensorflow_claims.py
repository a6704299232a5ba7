"""Claims of the knowledge base that can be observed on a CPU, shown with the real tensorflow-cpu.

Each check runs in a fresh subprocess (determinism switches are process-wide and read once).
These tests are the evidence that DET101, DET102, DET106, DET205, DET401, DET407 and DET408 link to.
"""
from __future__ import annotations

import importlib
import os
import random
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

from conftest import REORDERING_PIPELINE, kb_api_names, resolve_api
from detlint.knowledge import kb as kb_module
from detlint.knowledge.versions import Version

tf = pytest.importorskip("tensorflow")
TF_VERSION = Version.parse(tf.__version__)
KERAS3 = int(importlib.import_module("keras").__version__.split(".")[0]) >= 3
NOT_INSTALLED_HERE = ("sklearn", "keras_tuner", "kerastuner", "horovod", "tfdeterminism", "fwr13y", "fwd9m", "tf_keras",
                      "fire", "typer", "matplotlib", "albumentations", "hydra",
                      "optuna",  # optuna's names are checked on its wheels (benchmarks/verify_kb.py)
                      "gym", "gymnasium", "tflearn", "configargparse", "torchvision",
                      "easydict", "yacs", "ml_collections", "fvcore", "detectron2")
# names of other frameworks in TF's groups that the versions installed here no longer have
GONE_HERE = {
    # jax/tools/colab_tpu.py is in the jax 0.2.25-0.7 wheels (a stub that raises from 0.4), not 0.10
    "jax.tools.colab_tpu.setup_tpu",
}


def run_tf(code: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})}
    for key in ("TF_DETERMINISTIC_OPS", "PYTHONHASHSEED"):
        if key not in (env or {}):
            full_env.pop(key, None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_unseeded_random_op_raises_under_op_determinism() -> None:
    proc = run_tf("""
        import tensorflow as tf
        tf.config.experimental.enable_op_determinism()
        try:
            tf.random.normal([2])
        except RuntimeError as exc:
            print("RAISED", exc)
        tf.random.set_seed(1)
        print("SEEDED", tf.random.normal([2]).shape)
    """)
    assert "RAISED Random ops require a seed to be set when determinism is enabled" in proc.stdout
    assert "SEEDED (2,)" in proc.stdout


def test_timestamp_raises_under_op_determinism() -> None:
    proc = run_tf("""
        import tensorflow as tf
        print("BEFORE", float(tf.timestamp()) > 0)
        tf.config.experimental.enable_op_determinism()
        try:
            tf.timestamp()
        except tf.errors.FailedPreconditionError as exc:
            print("RAISED", type(exc).__name__)
    """)
    assert "BEFORE True" in proc.stdout and "RAISED FailedPreconditionError" in proc.stdout


def test_env_switch_is_honoured_and_read_once() -> None:
    proc = run_tf("""
        from tensorflow.python.framework import config
        import tensorflow as tf
        print("ENABLED", config.is_op_determinism_enabled())
        try:
            tf.random.normal([1])
        except RuntimeError:
            print("RAISED")
    """, env={"TF_DETERMINISTIC_OPS": "1"})
    assert "ENABLED True" in proc.stdout and "RAISED" in proc.stdout
    late = run_tf("""
        import os
        import tensorflow as tf
        tf.random.normal([1])  # the first determinism query reads the variable (unset)
        os.environ["TF_DETERMINISTIC_OPS"] = "1"
        tf.random.normal([1])
        print("NO EFFECT")
    """)
    assert "NO EFFECT" in late.stdout


def test_invalid_env_value_aborts_the_process() -> None:
    proc = run_tf("""
        import tensorflow as tf
        tf.random.normal([1])
        print("SURVIVED")
    """, env={"TF_DETERMINISTIC_OPS": "yes"}, check=False)
    assert proc.returncode in (-6, 134), (proc.returncode, proc.stderr[-500:])
    assert "SURVIVED" not in proc.stdout
    assert "TF_DETERMINISTIC_OPS" in proc.stderr





def orders(setup: str) -> list[list[int]]:
    proc = run_tf(REORDERING_PIPELINE.format(before="", after=setup, n=48, passes=3))
    return [[int(x) for x in line.split()[1].split(",")] for line in proc.stdout.splitlines()
            if line.startswith("ORDER")]


def test_parallel_map_with_deterministic_false_reorders_and_op_determinism_restores() -> None:
    loose = orders("")
    assert all(sorted(o) == list(range(48)) for o in loose)
    assert any(o != list(range(48)) for o in loose), "deterministic=False kept the order three times"
    strict = orders("tf.config.experimental.enable_op_determinism()")
    assert strict == [list(range(48))] * 3


def test_fractional_avg_pool_default_seed_escapes_op_determinism() -> None:
    code = """
        import tensorflow as tf
        tf.keras.utils.set_random_seed(1)
        tf.config.experimental.enable_op_determinism()
        x = tf.reshape(tf.range(400, dtype=tf.float32), [1, 20, 20, 1])
        outs = set()
        for _ in range(8):
            out = tf.nn.fractional_avg_pool(x, [1.0, 1.44, 1.73, 1.0]{seed})[0]
            outs.add(out.numpy().tobytes())
        print("DISTINCT", len(outs))
    """
    default = run_tf(code.format(seed=""))
    assert "DISTINCT 1" not in default.stdout, default.stdout
    seeded = run_tf(code.format(seed=", seed=7"))
    assert "DISTINCT 1" in seeded.stdout, seeded.stdout


def test_gfile_listings_keep_file_system_order_and_matching_files_sorts(tmp_path) -> None:
    names = [f"f{i:03d}.txt" for i in range(64)]
    random.Random(0).shuffle(names)
    for name in names:  # created out of order, so the directory does not hold them sorted
        (tmp_path / name).write_text("")
    if os.listdir(tmp_path) == sorted(names):
        pytest.skip("this file system lists directories in sorted order")
    proc = run_tf(f"""
        import tensorflow as tf
        d = {str(tmp_path)!r}
        print("LISTDIR", tf.io.gfile.listdir(d) == sorted(tf.io.gfile.listdir(d)))
        print("GLOB", tf.io.gfile.glob(d + "/*.txt") == sorted(tf.io.gfile.glob(d + "/*.txt")))
        found = [f.decode() for f in tf.io.matching_files(d + "/*.txt").numpy()]
        print("MATCHING", found == sorted(found) and len(found) == 64)
    """)
    assert "LISTDIR False" in proc.stdout and "GLOB False" in proc.stdout, proc.stdout
    assert "MATCHING True" in proc.stdout, proc.stdout


def test_queue_batch_with_several_threads_reorders() -> None:
    proc = run_tf("""
        import random, time
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()

        def jitter(i):
            time.sleep(random.random() * 0.002)
            return i

        def order(threads):
            with tf.Graph().as_default():
                producer = tf.compat.v1.train.range_input_producer(64, shuffle=False, num_epochs=1)
                i = tf.compat.v1.py_func(jitter, [producer.dequeue()], tf.int32)
                i.set_shape(())
                batch = tf.compat.v1.train.batch([i], 64, num_threads=threads)
                with tf.compat.v1.Session() as sess:
                    sess.run(tf.compat.v1.local_variables_initializer())
                    coord = tf.compat.v1.train.Coordinator()
                    runners = tf.compat.v1.train.start_queue_runners(sess, coord)
                    out = sess.run(batch).tolist()
                    coord.request_stop()
                    coord.join(runners)
            return ",".join(map(str, out))

        print("ONE", order(1))
        print("FOUR", order(4))
    """)
    runs = {line.split()[0]: [int(x) for x in line.split()[1].split(",")] for line in proc.stdout.splitlines()
            if line.startswith(("ONE", "FOUR"))}
    assert runs["ONE"] == list(range(64))
    assert sorted(runs["FOUR"]) == list(range(64)) and runs["FOUR"] != list(range(64))


KERAS_INIT = """
    import hashlib
    import keras
    import tensorflow as tf
    {seed}
    layer = keras.layers.Dense(8)
    layer.build((None, 4))
    print("KERNEL", hashlib.sha256(layer.kernel.numpy().tobytes()).hexdigest())
"""


def kernel(seed: str) -> str:
    proc = run_tf(KERAS_INIT.format(seed=seed))
    return next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("KERNEL"))


@pytest.mark.skipif(not KERAS3, reason="Keras 3 claim")
def test_keras3_needs_keras_set_random_seed() -> None:
    tf_only = {kernel("tf.random.set_seed(1)") for _ in range(2)}
    assert len(tf_only) == 2, "tf.random.set_seed alone made Keras 3 init reproducible"
    keras_seed = {kernel("keras.utils.set_random_seed(1)") for _ in range(2)}
    assert len(keras_seed) == 1


# prints, per named model, the op types of interest in the graph of one Keras training step
TRAIN_STEP_OPS = """
    import keras
    import tensorflow as tf
    {setup}
    WATCHED = {{"SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", "ResizeNearestNeighbor",
                "ResizeNearestNeighborGrad", "ResizeBilinear", "ResizeBilinearGrad"}}

    def step_ops(name, model, loss, x, y):
        model.compile(optimizer="sgd", loss=loss)
        model.optimizer.build(model.trainable_variables)
        graph = tf.function(model.train_step).get_concrete_function((x, y)).graph
        print("OPS", name, ",".join(sorted({{op.type for op in graph.get_operations()}} & WATCHED)))

    L = keras.layers
    features, classes = tf.TensorSpec([None, 4]), tf.TensorSpec([None], tf.int64)
    onehot = tf.TensorSpec([None, 3])
    def mlp(activation=None):
        return keras.Sequential([keras.Input((4,)), L.Dense(8), L.Dense(3, activation=activation)])
    {models}
"""


def train_step_ops(models: str, setup: str = "") -> dict[str, set[str]]:
    code = textwrap.dedent(TRAIN_STEP_OPS).format(setup=setup, models=textwrap.dedent(models))
    proc = run_tf(code)
    rows = [line.split(" ", 2)[1:] for line in proc.stdout.splitlines() if line.startswith("OPS ")]
    return {row[0]: set(filter(None, row[1].split(","))) if len(row) > 1 else set() for row in rows}


LOSS_MODELS = """
step_ops("sparse-string", mlp(), "sparse_categorical_crossentropy", features, classes)
step_ops("sparse-string-softmax", mlp("softmax"), "sparse_categorical_crossentropy", features, classes)
step_ops("sparse-function", mlp(), keras.losses.sparse_categorical_crossentropy, features, classes)
step_ops("sparse-class", mlp(), keras.losses.SparseCategoricalCrossentropy(), features, classes)
step_ops("categorical-string-softmax", mlp("softmax"), "categorical_crossentropy", features, onehot)
step_ops("categorical-softmax-layer", keras.Sequential([keras.Input((4,)), L.Dense(3), L.Softmax()]),
         "categorical_crossentropy", features, onehot)
step_ops("categorical-logits", mlp(), keras.losses.CategoricalCrossentropy(from_logits=True), features, onehot)
step_ops("categorical-string-linear", mlp(), "categorical_crossentropy", features, onehot)
"""


@pytest.mark.skipif(not KERAS3, reason="Keras 3 claim")
def test_keras3_crossentropy_losses_use_the_fused_softmax_ops() -> None:
    """TF-SPARSE-SOFTMAX-XENT / TF-SOFTMAX-XENT: Keras 3 on TensorFlow always calls the fused sparse
    op, and the dense one for logits and softmax outputs; under op determinism neither is built."""
    ops = train_step_ops(LOSS_MODELS)
    sparse, dense = {"SparseSoftmaxCrossEntropyWithLogits"}, {"SoftmaxCrossEntropyWithLogits"}
    assert {name: ops[name] for name in ops if name.startswith("sparse")} == dict.fromkeys(
        ["sparse-string", "sparse-string-softmax", "sparse-function", "sparse-class"], sparse)
    assert ops["categorical-string-softmax"] == ops["categorical-softmax-layer"] == ops["categorical-logits"] == dense
    assert ops["categorical-string-linear"] == set()
    deterministic = train_step_ops(LOSS_MODELS, setup="tf.config.experimental.enable_op_determinism()")
    assert len(deterministic) == 8 and all(found == set() for found in deterministic.values())


@pytest.mark.skipif(not KERAS3, reason="Keras 3 claim")
def test_resize_backprop_runs_only_downstream_of_weights() -> None:
    """Resizing at the model's input gets no gradient; after a layer with weights its nearest
    kernel's backprop is built. Keras 3 Resizing(interpolation="nearest") is ResizeNearestNeighbor."""
    ops = train_step_ops("""
        image, target = tf.TensorSpec([None, 8, 8, 3]), tf.TensorSpec([None, 2])
        def net(*stack):
            return keras.Sequential([keras.Input((8, 8, 3)), *stack, L.GlobalAveragePooling2D()])
        step_ops("nearest-at-input", net(L.RandomFlip(seed=1), L.Resizing(16, 16, interpolation="nearest"),
                                         L.Conv2D(2, 3)), "mse", image, target)
        step_ops("bilinear-at-input", net(L.Resizing(16, 16), L.Conv2D(2, 3)), "mse", image, target)
        step_ops("nearest-after-conv", net(L.Conv2D(2, 3), L.Resizing(16, 16, "nearest")), "mse", image, target)
        step_ops("bilinear-after-dense", net(L.Dense(2), L.Resizing(16, 16)), "mse", image, target)
    """)
    assert ops == {"nearest-at-input": {"ResizeNearestNeighbor"}, "bilinear-at-input": {"ResizeBilinear"},
                   "nearest-after-conv": {"ResizeNearestNeighbor", "ResizeNearestNeighborGrad"},
                   "bilinear-after-dense": {"ResizeBilinear", "ResizeBilinearGrad"}}


def test_tf_data_stage_functions_are_not_differentiated() -> None:
    """What a function given to Dataset.map computes is outside the gradient tape: a variable used
    there gets no gradient, so no backprop kernel of its ops ever runs."""
    proc = run_tf("""
        import tensorflow as tf
        scale = tf.Variable(2.0)
        ds = tf.data.Dataset.from_tensors(tf.ones([1, 4, 4, 1])).map(
            lambda image: tf.image.resize(image * scale, [8, 8], method="nearest"))
        with tf.GradientTape(persistent=True) as tape:
            batch = next(iter(ds))
            direct = tf.image.resize(tf.ones([1, 4, 4, 1]) * scale, [8, 8], method="nearest")
            loss = tf.reduce_sum(batch)
            direct_loss = tf.reduce_sum(direct)
        print("MAPPED", tape.gradient(loss, scale))
        print("DIRECT", float(tape.gradient(direct_loss, scale)))
    """)
    assert "MAPPED None" in proc.stdout
    assert "DIRECT 64.0" in proc.stdout, proc.stdout


def test_values_reaching_only_gradient_free_calls_get_no_gradient() -> None:
    """What gradient_sinks.py and the tape rules rely on: a gather whose result only reaches
    argmax, an integer cast or the indices of another gather, and one run before the tape, get
    no gradient (tape.gradient gives None for their table); minimize(var_list=[A]) builds no
    backprop for an embedding the listed variable does not feed."""
    proc = run_tf("""
        import tensorflow as tf
        table = tf.Variable(tf.random.stateless_normal([10, 4], seed=[1, 2]))
        ids = tf.constant([1, 2, 3])
        before = tf.gather(table, ids)  # outside the tape
        with tf.GradientTape(persistent=True) as tape:
            picked = tf.gather(table, ids)
            index = tf.argmax(picked, axis=1)
            as_int = tf.cast(tf.gather(table, ids), tf.int64)
            loss_sinks = tf.reduce_sum(tf.gather(tf.ones([10, 4]), index)) + tf.cast(tf.reduce_sum(as_int), tf.float32)
            loss_before = tf.reduce_sum(before * 2.0)
            loss_live = tf.reduce_sum(tf.gather(table, ids))
        print("SINKS", tape.gradient(loss_sinks, table))
        print("BEFORE", tape.gradient(loss_before, table))
        print("LIVE", type(tape.gradient(loss_live, table)).__name__)

        emb, A = tf.Variable(tf.ones([10, 4])), tf.Variable(tf.ones([4, 1]))

        def backprop_of_gather(sources):
            @tf.function
            def graph():
                loss = tf.reduce_sum(tf.matmul(tf.gather(emb, ids), A))
                return tf.gradients(loss, sources)
            names = [op.name for op in graph.get_concrete_function().graph.get_operations()]
            return any("Gather" in name and "_grad" in name for name in names)

        print("VAR_LIST_A", backprop_of_gather([A]))
        print("VAR_LIST_A_EMB", backprop_of_gather([A, emb]))
    """)
    assert "SINKS None" in proc.stdout and "BEFORE None" in proc.stdout, proc.stdout
    assert "LIVE IndexedSlices" in proc.stdout, proc.stdout  # the live gather's backprop does run
    assert "VAR_LIST_A False" in proc.stdout and "VAR_LIST_A_EMB True" in proc.stdout, proc.stdout


# ---- every API name the knowledge base claims exists on the installed version resolves ----------
def test_every_api_name_exists_in_the_installed_tensorflow() -> None:
    names = kb_api_names(kb_module.load(), "tensorflow", TF_VERSION)
    checked, missing = 0, []
    for owner, name in names:
        if name.split(".")[0] in NOT_INSTALLED_HERE or name in GONE_HERE:
            continue
        try:
            resolve_api(name)
            checked += 1
        except (AttributeError, ImportError):
            missing.append(f"{owner}: {name}")
    assert not missing, f"names the knowledge base claims exist in TF {TF_VERSION}:\n" + "\n".join(missing)
    assert checked > 150


@pytest.mark.parametrize("name", ["Session", "InteractiveSession", "placeholder", "get_variable", "variable_scope",
                                  "global_variables_initializer", "set_random_seed", "to_float", "random_normal",
                                  "logging", "train.AdamOptimizer", "train.Saver", "layers.dense", "contrib"])
def test_tf1_era_names_do_not_exist_in_tensorflow_2(name: str) -> None:
    """The era evidence of rules/versions.yaml: code using these names cannot run on TF 2 (unless
    it imports tensorflow.compat.v1 as tf, which the evidence excludes)."""
    if TF_VERSION < Version(2, 0):
        pytest.skip("a TensorFlow 2 claim")
    eras = {era.id: era for era in kb_module.load().eras}
    era = eras["tf-contrib" if name == "contrib" else "tf1-graph-api"]
    assert any(p.search(f"tf.{name}(") for p in era.patterns)
    assert era.tensorflow.contains(Version(1, 15)) and not era.tensorflow.contains(TF_VERSION)
    holder = tf
    for part in name.split("."):
        if not hasattr(holder, part):
            break
        holder = getattr(holder, part)
    else:
        pytest.fail(f"tf.{name} exists in TensorFlow {tf.__version__}")
    if name not in ("contrib", "layers.dense"):  # the TF 1 spelling, still there for compat.v1 code
        compat = tf.compat.v1
        for part in name.split("."):
            compat = getattr(compat, part)


def test_keras2_era_names_do_not_exist_in_keras_3() -> None:
    keras = importlib.import_module("keras")
    if int(keras.__version__.split(".")[0]) < 3:
        pytest.skip("a Keras 3 claim")
    assert not hasattr(keras.Model, "fit_generator") and not hasattr(keras.layers, "merge")
    with pytest.raises((ValueError, TypeError)):  # the lr= evidence: Keras 3 optimizers reject it
        keras.optimizers.Adam(lr=0.1)
    assert hasattr(keras, "ops") and hasattr(keras.utils, "set_random_seed")


def test_set_seed_none_clears_the_global_seed() -> None:
    """DET106: tf.random.set_seed(None) after a real seed leaves the ops unseeded (two runs differ),
    while the real seed alone repeats."""
    code = """
        import sys
        import tensorflow as tf
        tf.random.set_seed(1)
        if sys.argv[1:] == ["clear"]:
            tf.random.set_seed(None)
        print(float(tf.random.uniform([])))
    """
    def draw(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.strip()

    assert draw() == draw()
    assert draw("clear") != draw("clear")


def test_op_determinism_makes_a_parallel_stateful_random_map_repeat() -> None:
    """DET404's exception: under enable_op_determinism tf.data runs a map with stateful random
    ops serially, so a seeded run draws the same numbers for the same elements every time."""
    if TF_VERSION < Version(2, 8):
        pytest.skip("enable_op_determinism arrived in TF 2.8")
    code = """
        import tensorflow as tf
        tf.keras.utils.set_random_seed(3)
        tf.config.experimental.enable_op_determinism()
        ds = tf.data.Dataset.range(400).map(
            lambda x: tf.random.uniform([]) + tf.cast(x, tf.float32) * 0.0, num_parallel_calls=8)
        print(",".join(f"{float(v):.6f}" for v in ds))
    """
    first, second = run_tf(code).stdout, run_tf(code).stdout
    assert first == second and len(first.split(",")) == 400


def test_a_graph_seed_reaches_only_the_graph_it_is_set_in() -> None:
    # DET101 (tf-seeders scoped-by tf-graphs): a seed set before `with tf.Graph().as_default():`
    # leaves the new graph unseeded; one set first inside the block seeds it
    proc = run_tf("""
        import tensorflow as tf
        tf.compat.v1.set_random_seed(1)

        def draw(seed_inside):
            with tf.Graph().as_default():
                if seed_inside:
                    tf.compat.v1.set_random_seed(1)
                value = tf.compat.v1.random.uniform([4])
                with tf.compat.v1.Session() as session:
                    return session.run(value).tolist()

        print("OUTSIDE", draw(False) == draw(False))
        print("INSIDE", draw(True) == draw(True))
    """)
    assert "OUTSIDE False" in proc.stdout and "INSIDE True" in proc.stdout, proc.stdout
