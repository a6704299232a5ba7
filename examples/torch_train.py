"""A small PyTorch training script with the mistakes detlint finds (see the README)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.backends.cudnn.benchmark = True

device = "cuda" if torch.cuda.is_available() else "cpu"
x, y = torch.randn(256, 1, 28, 28), torch.randint(0, 10, (256,))
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb.to(device)), yb.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
