// main() of the workbench's test executables: `gui_tests NAME [QTest arguments]` runs the class
// registered as NAME as QTEST_MAIN would (the same application object and attributes), and
// `gui_tests --list` names them. NANSCOPE_GUI_TEST_NAMES, the list tests/CMakeLists.txt makes a
// ctest test of each, must equal what is registered: a class ctest would never run is an error.
#include <QtTest>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gui/gui_test_registry.h"

namespace {

std::set<std::string> names_ctest_runs() {
  std::set<std::string> names;
  const std::string list = NANSCOPE_GUI_TEST_NAMES;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    if (end > start) names.insert(list.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

int usage(const char* program) {
  std::fprintf(stderr, "usage: %s NAME [QTest arguments]   (NAME: one of", program);
  for (const auto& [name, make] : nanscope::gui_test::registered_tests())
    std::fprintf(stderr, " %s", name.c_str());
  std::fprintf(stderr, ")\n");
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  const auto& tests = nanscope::gui_test::registered_tests();
  std::set<std::string> registered;
  for (const auto& [name, make] : tests) registered.insert(name);
  if (registered != names_ctest_runs()) {
    std::fprintf(stderr,
                 "%s: the registered test classes differ from NANSCOPE_GUI_TEST_NAMES (%s)\n",
                 argv[0], NANSCOPE_GUI_TEST_NAMES);
    return 2;
  }
  if (argc < 2) return usage(argv[0]);
  const std::string name = argv[1];
  if (name == "--list") {
    for (const auto& n : registered) std::printf("%s\n", n.c_str());
    return 0;
  }
  const auto found = tests.find(name);
  if (found == tests.end()) return usage(argv[0]);

  // QTest reads its own arguments (-o, function names) after the program's name.
  std::vector<char*> qtest_args{argv[0]};
  for (int i = 2; i < argc; ++i) qtest_args.push_back(argv[i]);
  int qtest_argc = static_cast<int>(qtest_args.size());

  QTEST_MAIN_SETUP()  // the application QTEST_MAIN makes: QApplication with widgets, else
                      // QGuiApplication
  const auto test = found->second();
  return QTest::qExec(test.get(), qtest_argc, qtest_args.data());
}
