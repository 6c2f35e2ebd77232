#!/usr/bin/env python3
"""Makes each one-line mutant of the test audit (and of the tests written for it) by hand, rebuilds,
and checks that the test named for it fails; then puts the source back. Slow (a rebuild per mutant,
about 20 minutes on 2 cores), so not in CI: docs/building.md ("What the tests catch") records its
last run.

usage: tests/mutants/check_mutants.py BUILD_DIR [NAME...]
Exits 1 when a mutant survives (its test passes with the mutant in) or cannot be made.
"""
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name, file, original text, mutant text, ninja targets, test command (run in BUILD_DIR)
MUTANTS = [
    ("validate exits 0 on junk", "engine/io/file_guard.cpp",
     "    return exit_code_for(e.kind());", "    return 0;",
     ["nanscope-run", "tests/unit_tests"],
     "tests/unit_tests --gtest_filter=CliPromises.ValidateExits0On66OrOn78WithTheReason"),
    ("Run until fire on F6", "gui/widgets/main_window_actions.cpp",
     'add(QStyle::SP_MessageBoxWarning, "Run until fire", QKeySequence(Qt::Key_F5),',
     'add(QStyle::SP_MessageBoxWarning, "Run until fire", QKeySequence(Qt::Key_F6),',
     ["tests/gui_tests"],
     "QT_QPA_PLATFORM=offscreen tests/gui_tests shortcuts f5RunsUntilTheFirstFireAndF9SetsABreakpoint"),
    ("--guard ignored", "cli/run_command.cpp",
     '  if (o.guard) sets.push_back("guard.enabled=true");\n', "",
     ["nanscope-run", "tests/unit_tests"],
     "tests/unit_tests --gtest_filter=CliPromises.GuardLeavesTheParametersOfAStepThatFired"),
    ("jumped at more than 10x", "engine/session/step_compare.cpp",
     "ch.growth >= kJumpFactor", "ch.growth > kJumpFactor",
     ["tests/unit_tests"], "tests/unit_tests --gtest_filter=StepCompare.*"),
    ("jumped at 5x", "engine/session/step_compare.h",
     "kJumpFactor = 10.0", "kJumpFactor = 5.0",
     ["tests/unit_tests"], "tests/unit_tests --gtest_filter=StepCompare.*"),
    ("/watches fold and step swapped in writer and reader", "engine/io/run_file.cpp",
     '  H5Tinsert(t, "fold", HOFFSET(WatchRow, fold), H5T_NATIVE_INT32);\n'
     '  H5Tinsert(t, "step", HOFFSET(WatchRow, step), H5T_NATIVE_INT32);',
     '  H5Tinsert(t, "fold", HOFFSET(WatchRow, step), H5T_NATIVE_INT32);\n'
     '  H5Tinsert(t, "step", HOFFSET(WatchRow, fold), H5T_NATIVE_INT32);',
     ["nanscope-run", "tests/unit_tests"], "ctest -R io.h5py_interop --output-on-failure"),
    ("C51 mass error 1% high", "engine/model/cpu_check_bank.cpp",
     "return worst < 0 ? health_nan() : static_cast<float>(worst);",
     "return worst < 0 ? health_nan() : static_cast<float>(worst * 1.01);",
     ["tests/unit_tests"],
     "tests/unit_tests --gtest_filter=WatchHealth.MassErrorAndCrossingAreWhatTheBuffersSay"),
    ("ties counted as crossings", "engine/core/slot_health.h",
     "c.crossed += qi > qj;", "c.crossed += qi >= qj;",
     ["tests/unit_tests"],
     "tests/unit_tests --gtest_filter=WatchHealth.TiedQuantilesAreNotCrossedAndAFullRowHasMassOne"),
    ("replay's buffer_bit_equal always true", "cli/replay_command.cpp",
     '{"buffer_bit_equal", s.match.bit_equal}', '{"buffer_bit_equal", true}',
     ["nanscope-run", "tests/unit_tests"],
     "tests/unit_tests --gtest_filter=CliPromises.ReplaysBufferBitEqual*"),
    ("a device fault exits 69", "engine/core/errors.cpp",
     "    case ErrorKind::DeviceFault:\n", "    case ErrorKind::DeviceFault:\n      return 69;\n",
     ["nanscope-run", "tests/cuda_plugin_tests"],
     "tests/cuda_plugin_tests --gtest_filter=CudaPlugin.AFaultMidRun*"),
    ("absent cells painted in the disabled colour", "gui/plots/grid_plot.cpp",
     "    g.setColorStopAt(std::max(0.0, c * kStep - kHalfBand), cell_color(c));",
     "    g.setColorStopAt(std::max(0.0, c * kStep - kHalfBand), cell_color(c == kCellAbsent ? kCellDisabled : c));",
     ["tests/gui_tests"],
     "QT_QPA_PLATFORM=offscreen tests/gui_tests grid_colours everyStateIsDrawnInItsColour"),
    ("gpu-check.sh ignores a failing step", "scripts/gpu-check.sh",
     '  [ $code -eq 0 ] || failed+=("$name (exit $code)")\n', "",
     [], "ctest -R scripts.gpu_check_exit"),
    ("the twin skips without PyTorch", "tests/twin/torch_twin.sh",
     'if ! /usr/bin/python3 -c "import torch, h5py"', 'if ! /usr/bin/python3 -c "import torch_absent, h5py"',
     [], "ctest -R twin.torch"),
    ("the plugin's version not checked", "backend_choice/cuda_plugin.cpp",
     "std::strcmp(api->version, kVersion) != 0", "false",
     ["nanscope-run", "tests/cuda_plugin_tests"],
     "tests/cuda_plugin_tests --gtest_filter=CudaPlugin.APluginOfAnotherVersionIsRefused"),
]


def sh(cmd, cwd):
    return subprocess.run(cmd, shell=True, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main():
    build = os.path.abspath(sys.argv[1])
    chosen = sys.argv[2:]
    survived = []
    for name, path, old, new, targets, test in MUTANTS:
        if chosen and name not in chosen:
            continue
        full = os.path.join(SRC, path)
        original = open(full).read()
        if original.count(old) != 1:
            print(f"CANNOT MAKE  {name}: the text is not in {path} once")
            survived.append(name)
            continue
        try:
            open(full, "w").write(original.replace(old, new))
            if targets:
                b = sh("ninja " + " ".join(targets), build)
                if b.returncode != 0:
                    print(f"NOT BUILT    {name}\n{b.stdout[-2000:]}")
                    survived.append(name)
                    continue
            r = sh(test, build)
            if r.returncode == 0:
                print(f"SURVIVED     {name}: {test} passes")
                survived.append(name)
            else:
                print(f"caught       {name}: {test} fails (exit {r.returncode})")
        finally:
            open(full, "w").write(original)
    sh("ninja", build)  # the sources as they were
    print(f"{len(survived)} mutant(s) survived" if survived else "every mutant caught")
    sys.exit(1 if survived else 0)


if __name__ == "__main__":
    main()
