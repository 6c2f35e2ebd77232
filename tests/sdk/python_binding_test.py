#!/usr/bin/env python3
"""nanscope.sdk as a stranger uses it from the source tree (PYTHONPATH=<source>/python): a
deferred slot registered by its shape and given its array later, a wrong array for it refused by
the binding, the writer asked, refusals raised as nanscope.sdk.Error with the status's name, and a
closed session's handle refused, and a float16 array checked in its own type.

    python_binding_test.py BUILD_DIR SOURCE_DIR
"""
import os
import shutil
import sys
import tempfile

import numpy as np

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(source, "python"))
import nanscope.sdk as ns  # noqa: E402

lib = ns.load(os.path.join(build, "sdk", "libnanscope.so"))
work = tempfile.mkdtemp(prefix="nanscope_python_binding_")
try:
    x = np.ones(8, np.float32)
    s = ns.Session(work, trainer="binding", guard=True, overwrite=True, lib=lib)
    a = s.slot("a", 0, x, consumers="late")
    late = s.slot("late", 1, deferred=True, shape=(2, 4))
    try:
        s.slot("bad", 2, np.ones(3, np.int32))
        sys.exit("an int32 array was taken")
    except TypeError:
        pass
    with s.fold(0):
        with s.step(0) as st:
            s.check([a, late])  # deferred: takes its place, checks nothing
        assert st.result.fired == 0 and st.result.replays == 1, st.result
        try:
            s.set_array(late, np.ones(8, np.float64))
            sys.exit("a float64 array was taken for a float32 slot")
        except ValueError as e:
            assert "8 float32" in str(e), e
        poisoned = np.full((2, 4), np.nan, np.float32)
        s.set_array(late, poisoned)
        s.undefer(late)
        with s.step(1) as st:
            s.check([a, late])
        assert (st.result.fired, st.result.entry_slot, st.result.entry_step) == (1, late, 1), \
            (st.result.fired, st.result.entry_slot, st.result.entry_step)
        try:
            with s.step(5):
                pass
            sys.exit("a step out of order was taken")
        except ns.Error as e:
            assert e.status == 1 and e.status_name == "NS_ERR_ARGUMENT", (e.status, e)
            assert "the next step of fold 0 is 2" in str(e), e
    pending = s.writer_status()
    assert pending >= 0, pending
    handle = s.handle
    s.close()
    s.handle = handle  # the closed handle, used again
    try:
        s.undefer(late)
        sys.exit("a closed session's handle was taken")
    except ns.Error as e:
        assert e.status_name == "NS_ERR_HANDLE", e
    s.handle = ns._Session(0)
    assert os.path.exists(os.path.join(work, "run.h5"))
    # A float16 array, checked in its own type: 65504 and a subnormal are finite, -Inf fires.
    half_dir = os.path.join(work, "half")
    s = ns.Session(half_dir, trainer="binding_half", overwrite=True, lib=lib)
    values = np.array([1, -0.0, 65504, 6e-8], np.float16)
    h = s.slot("half", 0, values)
    with s.fold(0):
        with s.step(0) as st:
            s.check([h])
        assert st.result.fired == 0, st.result.fired
        values[1] = -np.inf
        with s.step(1) as st:
            s.check([h])
        assert (st.result.fired, st.result.entry_slot, st.result.entry_step) == (1, h, 1), \
            (st.result.fired, st.result.entry_slot, st.result.entry_step)
    s.close()
    print("python_binding: deferred by shape, wrong arrays refused, errors named, writer asked, "
          "a float16 array checked")
finally:
    shutil.rmtree(work, ignore_errors=True)
