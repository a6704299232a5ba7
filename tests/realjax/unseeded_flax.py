"""A Flax model whose key comes from the clock: its initial parameters differ between runs."""
import time

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(8)(x)))


x = jnp.linspace(0, 1, 64).reshape(16, 4)
y = x.sum(axis=1, keepdims=True)
model = MLP()
params = model.init(jax.random.key(time.time_ns() % 2**31), x)
tx = optax.sgd(0.1)
opt_state = tx.init(params)


@jax.jit
def train_step(params, opt_state, x, y):
    grads = jax.grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
    updates, opt_state = tx.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state


for step in range(5):
    params, opt_state = train_step(params, opt_state, x, y)
