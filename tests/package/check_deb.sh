#!/usr/bin/env bash
# Builds the Debian package from a configured build directory (cpack -G DEB) into a scratch folder
# and checks what it holds with dpkg-deb: both programs, the .desktop entry and its icon, both man
# pages, the docs, and a control file with the package's name, version and dependencies.
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
deb=$(ls "$out"/nanscope_*.deb)
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
status=0
for path in ./usr/bin/nanscope ./usr/bin/nanscope-run ./usr/share/applications/nanscope.desktop \
            ./usr/share/icons/hicolor/scalable/apps/nanscope.svg ./usr/share/man/man1/nanscope.1.gz \
            ./usr/share/man/man1/nanscope-run.1.gz ./usr/share/doc/nanscope/gui.md ./usr/share/doc/nanscope/README.md; do
  if ! grep -qx "$path" <<<"$contents"; then
    echo "check_deb: $deb lacks $path" >&2
    status=1
  fi
done
info=$(dpkg-deb -I "$deb")
for field in "Package: nanscope" "Version: " "Architecture: amd64" "Depends: .*libhdf5" "Depends: .*libqt6widgets6"; do
  if ! grep -qE "^ $field" <<<"$info"; then
    echo "check_deb: the control file has no '$field'" >&2
    status=1
  fi
done
# The desktop entry starts the program the package installs, with the icon it installs.
dpkg-deb -x "$deb" "$out/root"
grep -qx "Exec=nanscope %f" "$out/root/usr/share/applications/nanscope.desktop" || { echo "check_deb: Exec" >&2; status=1; }
grep -qx "Icon=nanscope" "$out/root/usr/share/applications/nanscope.desktop" || { echo "check_deb: Icon" >&2; status=1; }
zcat "$out/root/usr/share/man/man1/nanscope-run.1.gz" | grep -q "fB.*backend" || { echo "check_deb: man page" >&2; status=1; }
# apt would install it here: its dependencies resolve (a simulation; nothing is installed).
if command -v apt-get >/dev/null && ! apt-get install -s "$deb" >"$out/apt.log" 2>&1; then
  echo "check_deb: apt-get install -s $deb fails:" >&2
  tail -5 "$out/apt.log" >&2
  status=1
fi
[ $status -eq 0 ] && echo "check_deb: $(basename "$deb") holds the programs, desktop entry, icon, man pages and docs"
exit $status
