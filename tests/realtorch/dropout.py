"""Fixed initial weights, no seed: the first difference is the dropout mask inside the model."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(8, 1)
        for p in self.parameters():
            nn.init.constant_(p, 0.1)

    def forward(self, x):
        return self.out(self.drop(torch.relu(self.fc(x))))


x = torch.linspace(0, 1, 64).reshape(16, 4)
y = x.sum(dim=1, keepdim=True)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
