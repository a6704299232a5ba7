import tensorflow as tf


def conv_block(x, filters):
    x = tf.layers.conv2d(x, filters, 3, padding="same")
    return tf.nn.bias_add(x, tf.get_variable("b", [filters]))


def upsample(x):
    return tf.image.resize_nearest_neighbor(x, [64, 64])
