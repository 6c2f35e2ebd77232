#include "host_memory.h"

#include <sys/uio.h>
#include <unistd.h>

namespace nanscope::sdk {

namespace {
bool read_one(std::uint64_t address) {
  unsigned char byte = 0;
  iovec local{&byte, 1};
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), 1};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}
}  // namespace

bool host_readable(std::uint64_t address, std::size_t bytes, bool every_page) {
  if (address == 0 || bytes == 0) return false;
  if (address + bytes < address) return false;  // wraps around the address space
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t last = address + bytes - 1;
  if (!every_page) return read_one(address) && read_one(last);
  for (std::uint64_t a = address; a < last; a = (a / page + 1) * page)
    if (!read_one(a)) return false;
  return read_one(last);
}

}  // namespace nanscope::sdk
