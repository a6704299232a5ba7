"""Trains a small convnet on MNIST-shaped data: the structure of the classic Keras example.

Seeded with tf.random.set_seed only, so on Keras 3 the weights still change every run, and
op determinism is never enabled, so cuDNN picks different kernels on a GPU.
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from tensorflow.keras.models import Sequential

os.environ["PYTHONHASHSEED"] = "0"
os.environ["TF_USE_CUDNN_AUTOTUNE"] = "0"
tf.random.set_seed(123)

x_train = np.random.rand(256, 28, 28, 1).astype("float32")
y_train = np.random.randint(0, 10, size=256)

model = Sequential([
    Conv2D(32, kernel_size=(3, 3), activation="relu", input_shape=(28, 28, 1)),
    Conv2D(64, (3, 3), activation="relu"),
    MaxPooling2D(pool_size=(2, 2)),
    Dropout(0.25),
    Flatten(),
    Dense(128, activation="relu"),
    Dropout(0.5),
    Dense(10, activation="softmax"),
])
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=128, epochs=2)
