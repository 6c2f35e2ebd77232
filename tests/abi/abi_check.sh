#!/usr/bin/env bash
# libnanscope's ABI against ABI 1's first header (docs/sdk.md, "ABI policy"):
# - abidiff (Debian's abigail-tools) of the current library against ABI 1's surface
#   (abi1_surface.c, built from the frozen header) reports no change beyond what the policy allows
#   (fields appended to the structs passed by pointer, appended.abignore, and calls added), and
#   without that allowance it does see the appended fields, so the comparison is real;
# - the soname is libnanscope.so.<NS_ABI_VERSION>, and every exported ns_* symbol is in the
#   version node NANSCOPE_<NS_ABI_VERSION>.
#
# abi_check.sh SOURCE_DIR LIBNANSCOPE ABI1_SURFACE_LIBRARY
set -euo pipefail
source_dir=$1 lib=$2 surface=$3
abi=$(sed -n 's/^#define NS_ABI_VERSION \([0-9]*\)$/\1/p' "$source_dir/include/nanscope/nanscope.h")
here="$source_dir/tests/abi"

rc=0
# Calls added since (the policy allows them) are left out of this comparison; a call removed or
# changed is not.
abidiff --headers-dir1 "$here/abi1/nanscope" --headers-dir2 "$source_dir/include/nanscope" \
  --suppressions "$here/appended.abignore" --no-added-syms "$surface" "$lib" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "abi_check: abidiff reports a change ABI 1 does not allow (exit $rc)" >&2
  exit 1
fi
rc=0
report=$(abidiff --headers-dir1 "$here/abi1/nanscope" --headers-dir2 "$source_dir/include/nanscope" \
  "$surface" "$lib") || rc=$?
if [ $((rc & 4)) -eq 0 ] || ! grep -q "halt_step" <<<"$report"; then
  echo "abi_check: abidiff did not see the fields appended since ABI 1 (exit $rc):" >&2
  echo "$report" >&2
  exit 1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != "libnanscope.so.$abi" ]; then
  echo "abi_check: soname '$soname', not libnanscope.so.$abi" >&2
  exit 1
fi
symbols=$(readelf --dyn-syms -W "$lib" | awk '$5 == "GLOBAL" && $7 != "UND" && $8 ~ /^ns_/ { print $8 }')
count=$(wc -l <<<"$symbols")
unversioned=$(grep -v "@@NANSCOPE_$abi\$" <<<"$symbols" || true)
if [ -n "$unversioned" ] || [ "$count" -lt 19 ]; then
  echo "abi_check: ns_* exports outside NANSCOPE_$abi (or too few: $count):" >&2
  echo "$unversioned" >&2
  exit 1
fi
# The Rust crate's version is the header's (the one source of the version numbers).
version=$(sed -n 's/^#define NS_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$source_dir/include/nanscope/nanscope.h" | paste -sd.)
crate=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$source_dir/examples/rust/Cargo.toml")
if [ "$crate" != "$version" ]; then
  echo "abi_check: examples/rust/Cargo.toml says $crate, the header $version" >&2
  exit 1
fi
echo "abi_check: ABI $abi holds: $count calls in NANSCOPE_$abi, soname $soname, abidiff clean" \
  "against ABI 1's first header but for the appended fields"
