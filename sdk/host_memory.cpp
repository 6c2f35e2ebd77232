#include "host_memory.h"

#include <sys/uio.h>
#include <unistd.h>

namespace nanscope::sdk {

namespace {

// The process's own id, asked once (getpid is a system call on current glibc).
pid_t self() {
  static const pid_t pid = getpid();
  return pid;
}

bool in_address_space(std::uint64_t address, std::size_t bytes) {
  return address != 0 && bytes != 0 && address + bytes > address;  // no wrap around
}

bool read_into(std::uint64_t address, std::size_t bytes, void* out) {
  // One call may read less than asked (a fault stops it), and large reads come in pieces.
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{dst + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + done)),
                 bytes - done};
    const ssize_t n = process_vm_readv(self(), &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool host_readable(std::uint64_t address, std::size_t bytes) {
  if (!in_address_space(address, bytes)) return false;
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t last = address + bytes - 1;
  unsigned char byte = 0;
  for (std::uint64_t a = address; a < last; a = (a / page + 1) * page)
    if (!read_into(a, 1, &byte)) return false;
  return read_into(last, 1, &byte);
}

bool host_copy(std::uint64_t address, std::size_t bytes, void* out) {
  return in_address_space(address, bytes) && read_into(address, bytes, out);
}

}  // namespace nanscope::sdk
