"""Seeded weights, but the loader shuffles with a generator seeded from OS entropy: the first batch differs."""
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.linspace(0, 1, 256).reshape(64, 4)
y = x.sum(dim=1, keepdim=True)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
entropy = int.from_bytes(os.urandom(4), "little")
loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(entropy))
for xb, yb in loader:
    opt.zero_grad()
    ((model(xb) - yb) ** 2).mean().backward()
    opt.step()
