"""A small Flax/Optax training script with the mistakes detlint finds (see the README)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(10)(nn.relu(nn.Dense(64)(x)))


model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 784)))
tx = optax.adam(1e-3)
opt_state = tx.init(params)


@jax.jit
def step(params, opt_state, x, y):
    def loss_fn(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state, loss


x, y = np.random.rand(512, 784).astype("float32"), np.random.randint(0, 10, 512)
for epoch in range(2):
    order = np.random.permutation(len(x))
    for i in range(0, len(x), 64):
        batch = order[i:i + 64]
        params, opt_state, loss = step(params, opt_state, x[batch], y[batch])
