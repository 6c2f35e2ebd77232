// What a run asks for as its backend (--backend of nanscope-run and the workbench, a sweep's
// sweep.backend): auto is CUDA where the plugin, a device and the config allow it, else the CPU
// (backend_choice/backend_choice.h). Read into this enum where it is written, compared as it.
#pragma once

#include <array>
#include <string_view>

#include "core/enum_names.h"

namespace nanscope {

enum class BackendChoice { Auto, Cpu, Cuda };
template <>
struct EnumNames<BackendChoice> {
  static constexpr std::array<std::string_view, 3> kNames = {"auto", "cpu", "cuda"};
};

}  // namespace nanscope
