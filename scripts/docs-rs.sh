#!/usr/bin/env bash
# Builds one crate's documentation as docs.rs would: the features, `no-default-features` and
# `rustdoc-args` of its [package.metadata.docs.rs], DOCS_RS=1, the library only, and every
# rustdoc warning an error (broken intra-doc links, missing docs):
#
#   scripts/docs-rs.sh [+TOOLCHAIN] MANIFEST PACKAGE
#
# docs.rs runs a nightly rustdoc; capture-core needs one for `--cfg docsrs` (doc_cfg).
set -euo pipefail
toolchain=()
if [[ ${1:-} == +* ]]; then toolchain=("$1"); shift; fi
[ $# -eq 2 ] || { echo "usage: $0 [+TOOLCHAIN] MANIFEST PACKAGE" >&2; exit 2; }
manifest=$1 package=$2
{ read -r cargo_args; read -r rustdoc_args; } < <(
  cargo metadata --no-deps --format-version 1 --manifest-path "$manifest" | python3 -c '
import json, sys
package = sys.argv[1]
[p] = [p for p in json.load(sys.stdin)["packages"] if p["name"] == package]
d = ((p.get("metadata") or {}).get("docs") or {}).get("rs") or {}
args = ["--no-default-features"] if d.get("no-default-features") else []
if d.get("all-features"):
    args.append("--all-features")
if d.get("features"):
    args.append("--features=" + ",".join(d["features"]))
print(" ".join(args) or "-")
print(" ".join(d.get("rustdoc-args", [])) or "-")
' "$package")
[ "$cargo_args" = - ] && cargo_args=
[ "$rustdoc_args" = - ] && rustdoc_args=
echo "docs-rs: cargo ${toolchain[*]} doc -p $package --lib --no-deps $cargo_args (RUSTDOCFLAGS=$rustdoc_args -D warnings)"
# shellcheck disable=SC2086 # the arguments are single words
DOCS_RS=1 RUSTDOCFLAGS="$rustdoc_args -D warnings" \
  cargo "${toolchain[@]}" doc --manifest-path "$manifest" -p "$package" --lib --no-deps $cargo_args
