#!/bin/bash
# run.sh OUTDIR [NAME...]: run detlint on every repository (or the named ones) under $DETLINT_EVAL/repos;
# each repository folder is the project root. JSON findings and --show-settings go to $DETLINT_EVAL/OUTDIR.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
EVAL=${DETLINT_EVAL:-$HERE}
OUT=$EVAL/${1:?usage: run.sh OUTDIR [NAME...]}; shift
DETLINT=${DETLINT:-detlint}
mkdir -p "$OUT"
NAMES=("$@"); [ ${#NAMES[@]} -eq 0 ] && NAMES=(dcgan genmodels albert cookbook densenet imgseg segmodels tf2examples tf2tut t81 tfdocs kerastuner kerashub)
for n in "${NAMES[@]}"; do
  ( cd "$EVAL/repos/$n" || exit 1
    "$DETLINT" --no-cache --no-progress --output-format json --exit-zero -j 2 . > "$OUT/$n.json" 2> "$OUT/$n.stderr"
    echo "$n rc=$? $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT/$n.json" 2>/dev/null) findings"
    "$DETLINT" --show-settings . > "$OUT/$n.settings.json" 2>> "$OUT/$n.stderr" )
done
