#include "host_memory.h"

#include <sys/uio.h>

#include <unistd.h>
#include <cstdio>

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

// The range's pages read one byte each through the kernel: a system call a page, used only
// where the process's mappings cannot be listed.
bool readable_page_by_page(std::uint64_t address, std::size_t bytes) {
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t last = address + bytes - 1;
  unsigned char byte = 0;
  for (std::uint64_t a = address; a < last; a = (a / page + 1) * page)
    if (!read_into(a, 1, &byte)) return false;
  return read_into(last, 1, &byte);
}

}  // namespace

bool host_readable(std::uint64_t address, std::size_t bytes) {
  if (!in_address_space(address, bytes)) return false;
  // The range against the process's mappings (/proc/self/maps, in address order): one read of a
  // small text whatever the buffer's size, where touching each page would cost a system call per
  // page and a wrong count would be walked page by page until its first hole.
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (!maps) return readable_page_by_page(address, bytes);  // no /proc: touch each page instead
  std::uint64_t covered = address;                          // [address, covered) is readable so far
  const std::uint64_t end = address + bytes;
  char line[512];
  while (covered < end && std::fgets(line, sizeof line, maps)) {
    unsigned long long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
    if (hi <= covered) continue;
    if (lo > covered || perms[0] != 'r') break;  // a hole, or a mapping that cannot be read
    covered = hi;
  }
  std::fclose(maps);
  return covered >= end;
}

bool host_copy(std::uint64_t address, std::size_t bytes, void* out) {
  return in_address_space(address, bytes) && read_into(address, bytes, out);
}

}  // namespace nanscope::sdk
