#!/bin/bash
# run detlint as a user would, at the round's code (worktree /work/r40code, 1e57c2e)
n=$1
cd /work/blind/r17/repos/$n || exit 1
PYTHONPATH=/work/r40code /work/main/.venv/bin/python -m detlint . --no-cache > /work/blind/r17/runs/$n.txt 2>&1; echo "rc=$?" >> /work/blind/r17/runs/$n.txt
PYTHONPATH=/work/r40code /work/main/.venv/bin/python -m detlint . --no-cache --min-confidence possible --output-format json > /work/blind/r17/runs/$n.json 2>/work/blind/r17/runs/$n.err
