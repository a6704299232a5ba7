"""A small Keras model with default initialisers and no seed: the most common reason runs differ."""
import keras
import numpy as np

x = np.linspace(0, 1, 256, dtype="float32").reshape(64, 4)
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([
    keras.Input((4,)),
    keras.layers.Dense(8, activation="relu"),
    keras.layers.Dense(1),
])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
