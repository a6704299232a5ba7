"""A small Keras CNN trained on CPU; prints a hash of its weights. Used by the runtime tests:
the first line may be replaced by `import detlint; detlint.apply(seed=...)`."""
# DETLINT-HOOK
import hashlib

import numpy as np
import tensorflow as tf

x = np.linspace(0.0, 1.0, 32 * 10 * 10).reshape(32, 10, 10, 1).astype("float32")
y = (np.arange(32) % 3).astype("int64")
model = tf.keras.Sequential([
    tf.keras.Input((10, 10, 1)),
    tf.keras.layers.Conv2D(4, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Dropout(0.4),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(3),
])
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, epochs=2, batch_size=8, verbose=0)
print("WEIGHTS", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest())
