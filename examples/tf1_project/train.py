import os

import tensorflow as tf

from nets.resnet import conv_block, upsample

os.environ["TF_DETERMINISTIC_OPS"] = "1"  # not read by stock TensorFlow 1.15


def main():
    tf.set_random_seed(0)
    images = tf.placeholder(tf.float32, [None, 32, 32, 3])
    logits = upsample(conv_block(images, 16))
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
    with tf.Session() as sess:
        sess.run(train_op)


if __name__ == "__main__":
    main()
