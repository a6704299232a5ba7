#!/bin/bash
# run detlint as a user would, at the round's code (worktree /work/r41code, 60f3373)
n=$1
cd /work/blind/r18/repos/$n || exit 1
PYTHONPATH=/work/r41code /work/main/.venv/bin/python -m detlint . --no-cache > /work/blind/r18/runs/$n.txt 2>&1; echo "rc=$?" >> /work/blind/r18/runs/$n.txt
PYTHONPATH=/work/r41code /work/main/.venv/bin/python -m detlint . --no-cache --min-confidence possible --output-format json > /work/blind/r18/runs/$n.json 2>/work/blind/r18/runs/$n.err
