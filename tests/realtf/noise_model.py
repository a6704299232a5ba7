"""A model whose only randomness is an unseeded noise op in the middle (weights are constant)."""
import numpy as np
import tensorflow as tf


class Noise(tf.keras.layers.Layer):
    def call(self, x):
        return x + tf.random.uniform(tf.shape(x), maxval=0.1)


x = np.linspace(0.0, 1.0, 16 * 4).reshape(16, 4).astype("float32")
y = np.linspace(1.0, 0.0, 16).reshape(16, 1).astype("float32")
model = tf.keras.Sequential([
    tf.keras.Input((4,)),
    tf.keras.layers.Dense(3, kernel_initializer="ones"),
    Noise(),
    tf.keras.layers.Dense(1, kernel_initializer="ones"),
])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
