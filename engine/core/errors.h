// Typed errors. Each carries where it happened (a file and line, a config key, a slot) in its
// message, so the user reads the place, not just the symptom. Nothing below main() exits; the
// composition roots map these kinds to exit codes (the README lists them) or dialogs.
#pragma once

#include <stdexcept>
#include <string>

namespace nanscope {

enum class ErrorKind {
  Usage,         // bad command line
  MissingInput,  // a named input file does not exist
  Config,        // a bad config key or value
  Data,          // bad input data (CSV rows, bar series)
  Io,            // reading or writing a file failed
  Device,        // no usable CUDA device (none, or it is gone)
  DeviceFault,   // a CUDA error in the middle of the work (an illegal address, a failed launch)
  Internal,      // a bug or an unexpected state
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

struct UsageError : Error {
  explicit UsageError(const std::string& m) : Error(ErrorKind::Usage, m) {}
};
struct MissingInputError : Error {
  explicit MissingInputError(const std::string& m) : Error(ErrorKind::MissingInput, m) {}
};
struct ConfigError : Error {
  explicit ConfigError(const std::string& m) : Error(ErrorKind::Config, m) {}
};
struct DataError : Error {
  explicit DataError(const std::string& m) : Error(ErrorKind::Data, m) {}
};
struct IoError : Error {
  explicit IoError(const std::string& m) : Error(ErrorKind::Io, m) {}
};
// A device error: the device is not usable (kind Device, exit 69) or a call failed in the middle
// of the work (kind DeviceFault, exit 70). Either way the CUDA context is not trusted again.
struct DeviceError : Error {
  explicit DeviceError(const std::string& m, ErrorKind k = ErrorKind::Device) : Error(k, m) {}
};
struct InternalError : Error {
  explicit InternalError(const std::string& m) : Error(ErrorKind::Internal, m) {}
};

// sysexits-style exit code listed in the README for an error kind.
int exit_code_for(ErrorKind kind) noexcept;

}  // namespace nanscope
