"""Step functions for detlint.diverge's Python API tests (module-level, so they pickle)."""


def cnn_step(fail: bool = False):
    import numpy as np
    import tensorflow as tf

    x = np.linspace(0.0, 1.0, 8 * 8 * 8).reshape(8, 8, 8, 1).astype("float32")
    y = (np.arange(8) % 2).astype("int64")
    model = tf.keras.Sequential([tf.keras.Input((8, 8, 1)), tf.keras.layers.Conv2D(2, 3),
                                 tf.keras.layers.MaxPooling2D(), tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=4, epochs=3, verbose=0)
    if fail:
        raise RuntimeError("the user's program failed after training")
