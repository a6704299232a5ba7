"""A small training script with the usual reproducibility mistakes (used by the real-TF tests)."""
import hashlib
import time

import numpy as np
import tensorflow as tf

x_all = np.random.rand(64, 12, 12, 1).astype("float32")
y_all = np.random.randint(0, 3, size=64)


def slow_identity(i):
    time.sleep(0.002 * (int(i) % 5))  # elements finish out of order in a parallel map
    return i


def load(i):
    i = tf.py_function(slow_identity, [i], tf.int64)
    i.set_shape(())
    return tf.gather(x_all, i), tf.gather(y_all, i)


ds = tf.data.Dataset.range(64).map(load, num_parallel_calls=8, deterministic=False).batch(16)
model = tf.keras.Sequential([
    tf.keras.Input((12, 12, 1)),
    tf.keras.layers.Conv2D(4, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Dropout(0.3),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(3),
])
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, epochs=2, verbose=0)
digest = hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()
print("WEIGHTS", digest)
