#include "core/errors.h"

namespace nanscope {

int exit_code_for(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::Usage:
      return 2;
    case ErrorKind::MissingInput:
      return 66;
    case ErrorKind::Device:
      return 69;
    case ErrorKind::DeviceFault:
    case ErrorKind::Internal:
      return 70;
    case ErrorKind::Io:
      return 74;
    case ErrorKind::Config:
    case ErrorKind::Data:
      return 78;
  }
  return 70;
}

}  // namespace nanscope
