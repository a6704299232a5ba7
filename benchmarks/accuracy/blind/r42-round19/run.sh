#!/bin/bash
# run detlint as a user would, at the round's code (worktree /work/r42code, e50202a)
n=$1
cd /work/blind/r19/repos/$n || exit 1
PYTHONPATH=/work/r42code /work/main/.venv/bin/python -m detlint . --no-cache > /work/blind/r19/runs/$n.txt 2>&1; echo "rc=$?" >> /work/blind/r19/runs/$n.txt
PYTHONPATH=/work/r42code /work/main/.venv/bin/python -m detlint . --no-cache --min-confidence possible --output-format json > /work/blind/r19/runs/$n.json 2>/work/blind/r19/runs/$n.err
