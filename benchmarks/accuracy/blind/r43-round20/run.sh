#!/bin/bash
# run detlint as a user would, at the round's code (worktree /work/r43code, b5eb6cc)
n=$1
cd /work/blind/r20/repos/$n || exit 1
PYTHONPATH=/work/r43code /work/main/.venv/bin/python -m detlint . --no-cache > /work/blind/r20/runs/$n.txt 2>&1; echo "rc=$?" >> /work/blind/r20/runs/$n.txt
PYTHONPATH=/work/r43code /work/main/.venv/bin/python -m detlint . --no-cache --min-confidence possible --output-format json > /work/blind/r20/runs/$n.json 2>/work/blind/r20/runs/$n.err
