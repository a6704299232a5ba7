"""Constant weights, but a parallel map with deterministic=False feeds batches in timing order."""
import random
import time

import numpy as np
import tensorflow as tf

x = np.arange(32 * 2, dtype="float32").reshape(32, 2)


def jitter(i):
    time.sleep(random.SystemRandom().random() * 0.02)  # timing noise no seed can fix, larger than scheduling noise
    return i


def load(i):
    j = tf.py_function(jitter, [i], tf.int64)
    j.set_shape(())
    return tf.gather(x, j), tf.reduce_sum(tf.gather(x, j), keepdims=True)


# (prefetch keeps tf.data from fusing map and batch, which would restore the order)
ds = tf.data.Dataset.range(32).map(load, num_parallel_calls=8, deterministic=False).prefetch(2).batch(8)
model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1, kernel_initializer="ones")])
model.compile(optimizer="sgd", loss="mse")
model.fit(ds, epochs=1, verbose=0)
