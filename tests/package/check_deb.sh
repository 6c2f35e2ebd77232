#!/usr/bin/env bash
# Builds the Debian packages from a configured build directory (cpack -G DEB) into a scratch folder
# and checks what they hold with dpkg-deb: nanscope has both programs, the .desktop entry and its
# icon, both man pages, the docs, the SDK (header, library, CMake package, pkg-config file,
# examples), and a control file with the package's name, version and Debian
# dependencies, none of them CUDA's; in a build with the CUDA library, nanscope-cuda has the plugin
# and depends on nanscope of its version and on NVIDIA's cuBLAS package.
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
            ./usr/share/man/man1/nanscope-run.1.gz ./usr/share/doc/nanscope/gui.md ./usr/share/doc/nanscope/README.md \
            ./usr/share/doc/nanscope/copyright ./usr/include/nanscope/nanscope.h ./usr/lib/libnanscope.so.1 \
            ./usr/lib/cmake/nanscope/nanscopeConfig.cmake ./usr/lib/pkgconfig/nanscope.pc \
            ./usr/share/doc/nanscope/sdk.md ./usr/share/doc/nanscope/examples/c_mlp/mlp.c; do
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
if grep -qiE "^ Depends: .*(cuda|cublas)" <<<"$info"; then
  echo "check_deb: nanscope depends on CUDA: $(grep '^ Depends' <<<"$info")" >&2
  status=1
fi
if [ -f "$build/lib/nanscope/libnanscope-cuda.so" ]; then
  cuda_deb=$(ls "$out"/nanscope-cuda_*.deb 2>/dev/null) || { echo "check_deb: no nanscope-cuda package" >&2; exit 1; }
  for path in ./usr/lib/nanscope/libnanscope-cuda.so ./usr/share/doc/nanscope-cuda/copyright; do
    dpkg-deb -c "$cuda_deb" | awk '{print $6}' | grep -qx "$path" ||
      { echo "check_deb: $cuda_deb lacks $path" >&2; status=1; }
  done
  cuda_info=$(dpkg-deb -I "$cuda_deb")
  for field in "Package: nanscope-cuda" "Depends: .*nanscope \\(= [0-9.]+\\)" "Depends: .*libcublas-[0-9]+-[0-9]+"; do
    grep -qE "^ $field" <<<"$cuda_info" || { echo "check_deb: nanscope-cuda's control file has no '$field'" >&2; status=1; }
  done
  if dpkg-deb -c "$deb" | grep -q "libnanscope-cuda"; then
    echo "check_deb: the plugin is in nanscope, not only in nanscope-cuda" >&2
    status=1
  fi
fi
[ $status -eq 0 ] && echo "check_deb: $(basename "$deb") holds the programs, desktop entry, icon, man pages and docs"
exit $status
