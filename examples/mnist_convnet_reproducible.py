"""The same convnet, written to train the same way on every run (TF >= 2.8)."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from tensorflow.keras.models import Sequential

tf.keras.utils.set_random_seed(123)  # seeds Python, NumPy and TensorFlow (and Keras 3)
tf.config.experimental.enable_op_determinism()

x_train = np.random.rand(256, 28, 28, 1).astype("float32")
y_train = np.random.randint(0, 10, size=256)

model = Sequential([
    Conv2D(32, kernel_size=(3, 3), activation="relu", input_shape=(28, 28, 1)),
    MaxPooling2D(pool_size=(2, 2)),
    Dropout(0.25),
    Flatten(),
    Dense(10, activation="softmax"),
])
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam", jit_compile=False)
model.fit(x_train, y_train, batch_size=128, epochs=2)
