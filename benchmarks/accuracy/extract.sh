#!/bin/bash
# extract.sh GITDIR DEST [paths...]: extract HEAD file by file, skipping blobs absent from the snapshot
d=$1; dest=$2; shift 2
mkdir -p "$dest"
git --git-dir="$d" ls-tree -r -z HEAD -- "$@" | while IFS= read -r -d '' line; do
  meta=${line%%$'\t'*}; path=${line#*$'\t'}
  set -- $meta; mode=$1; type=$2; sha=$3
  [ "$type" = blob ] || continue
  [ "$mode" = 120000 ] && continue
  mkdir -p "$dest/$(dirname "$path")"
  if ! git --git-dir="$d" cat-file blob "$sha" > "$dest/$path" 2>/dev/null; then rm -f "$dest/$path"; echo "MISSING $path" >> "$dest.missing"; fi
done
