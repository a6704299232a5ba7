"""A small PyTorch model with default initialisation and no seed: its initial weights differ."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


x = torch.linspace(0, 1, 64).reshape(16, 4)
y = x.sum(dim=1, keepdim=True)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
