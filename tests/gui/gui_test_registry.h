// The workbench's test classes share two executables (gui_tests with the widgets, gui_model_tests
// with the models library alone) instead of one executable each: one link and one precompiled
// header per executable. ctest runs one class per test (gui.NAME: `gui_tests NAME [QTest args]`),
// so each class still runs alone in a fresh process, as with QTEST_MAIN.
#pragma once

#include <QObject>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace nanscope::gui_test {

using TestFactory = std::function<std::unique_ptr<QObject>()>;

// The classes this executable holds, by the name ctest gives them.
inline std::map<std::string, TestFactory>& registered_tests() {
  static std::map<std::string, TestFactory> tests;
  return tests;
}

inline bool register_test(const char* name, TestFactory make) {
  registered_tests().emplace(name, std::move(make));
  return true;
}

}  // namespace nanscope::gui_test

// In place of QTEST_MAIN(Class): registers Class under NAME (the file's name without _test.cpp).
#define NANSCOPE_GUI_TEST(NAME, Class)                                      \
  static const bool registered_##Class = nanscope::gui_test::register_test( \
      NAME, [] { return std::unique_ptr<QObject>(std::make_unique<Class>()); })
