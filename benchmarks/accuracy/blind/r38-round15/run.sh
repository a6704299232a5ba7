#!/bin/bash
# run detlint as a user would, at the round's code (worktree /work/r38code, 628958c)
n=$1
cd /work/blind/r15/repos/$n || exit 1
PYTHONPATH=/work/r38code /work/main/.venv/bin/python -m detlint . --no-cache > /work/blind/r15/runs/$n.txt 2>&1; echo "rc=$?" >> /work/blind/r15/runs/$n.txt
PYTHONPATH=/work/r38code /work/main/.venv/bin/python -m detlint . --no-cache --min-confidence possible --output-format json > /work/blind/r15/runs/$n.json 2>/work/blind/r15/runs/$n.err
