#!/usr/bin/env python3
"""docs/sdk.md's C programs compile and run as a reader would use them.

    doc_snippets.py SOURCE_DIR BUILD_DIR

Every ```c block of docs/sdk.md that holds `int main(` is a whole program: it is compiled against
the source tree's header and the build's libnanscope under -Wall -Wextra -Werror, as C99 (with
-pedantic) and as C++, and the C build is run in a scratch folder; it must exit 0 and write a run
file. The other blocks are fragments whose whole programs are tested elsewhere (they name them).
"""
import os
import re
import subprocess
import sys
import tempfile

source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
doc = open(os.path.join(source, "docs", "sdk.md")).read()
programs = [b for b in re.findall(r"```c\n(.*?)```", doc, re.S) if "int main(" in b]
if not programs:
    sys.exit("doc_snippets: docs/sdk.md has no whole C program")
lib_dir = os.path.join(build, "sdk")
flags = ["-I", os.path.join(source, "include"), "-L", lib_dir, "-lnanscope",
         f"-Wl,-rpath,{lib_dir}", "-Wall", "-Wextra", "-Werror"]
work = tempfile.mkdtemp(prefix="nanscope_doc_snippets_")
for i, program in enumerate(programs):
    c_file = os.path.join(work, f"snippet{i}.c")
    with open(c_file, "w") as f:
        f.write(program)
    c_exe, cxx_exe = os.path.join(work, f"snippet{i}_c"), os.path.join(work, f"snippet{i}_cxx")
    for cmd in (["cc", "-std=c99", "-pedantic", c_file, "-o", c_exe] + flags,
                ["c++", "-std=c++17", "-x", "c++", c_file, "-x", "none", "-o", cxx_exe] + flags):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"doc_snippets: docs/sdk.md's program {i} does not compile:\n"
                     f"{' '.join(cmd)}\n{p.stderr}")
    p = subprocess.run([c_exe], cwd=work, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"doc_snippets: program {i} exits {p.returncode}:\n{p.stdout}{p.stderr}")
    runs = [os.path.join(d, "run.h5") for d, _, files in os.walk(work) if "run.h5" in files]
    if not runs:
        sys.exit(f"doc_snippets: program {i} wrote no run file")
    print(f"doc_snippets: program {i}: compiled as C99 and C++, ran: {p.stdout.strip()}")
