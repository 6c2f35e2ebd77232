// This process's memory read through the kernel (process_vm_readv on the process itself) instead
// of touched: a pointer a trainer passed that is not readable (device memory passed as host
// memory, a buffer freed and unmapped, a page protected, a made-up address or a wrong count) is
// refused with an error rather than followed into a crash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nanscope::sdk {

// Whether [address, address + bytes) lies in readable mappings of the process (a registration's
// look: no page is touched, and its cost grows with the mappings before the buffer, not with the
// buffer). A range that runs on into an adjacent readable mapping cannot be told from a buffer.
bool host_readable(std::uint64_t address, std::size_t bytes);
// Copies [address, address + bytes) into `out` in one call; false (and `out` unspecified) when any
// part of it cannot be read. What a check scans is this copy, never the trainer's memory itself.
bool host_copy(std::uint64_t address, std::size_t bytes, void* out);

}  // namespace nanscope::sdk
