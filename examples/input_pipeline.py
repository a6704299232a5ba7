"""A tf.data input pipeline tuned for speed at the cost of order, plus XLA."""
import random

import tensorflow as tf


def augment(image):
    return tf.image.random_flip_left_right(image)


def make_dataset(files):
    random.shuffle(files)
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds = ds.shuffle(1000)
    ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
    options = tf.data.Options()
    options.experimental_deterministic = False
    return ds.with_options(options).batch(32)


@tf.function(jit_compile=True)
def train_step(model, optimizer, images, labels):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, model(images)))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


if __name__ == "__main__":
    dataset = make_dataset([f"img_{i}.png" for i in range(100)])
    for images, labels in dataset:
        train_step(model, optimizer, images, labels)
