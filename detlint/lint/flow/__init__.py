"""What runs and what is trained inside a program: order, branches, gradients, layers."""
