// Whether a span of this process's memory can be read, asked of the kernel (process_vm_readv on
// the process itself) instead of touched: a pointer a trainer passed that is not mapped (device
// memory passed as host memory, a freed buffer that was unmapped, a made-up address) is refused
// with an error rather than followed into a crash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nanscope::sdk {

// Reads a byte at the start and one at the end, and with `every_page` one in each page between
// (a registration's full look; a check looks at the two ends); true when all were read.
bool host_readable(std::uint64_t address, std::size_t bytes, bool every_page);

}  // namespace nanscope::sdk
