#include "core/utc_time.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <ctime>

namespace nanscope {

std::string utc_now(const char* format, bool milliseconds) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::string out(buf, std::strftime(buf, sizeof buf, format, &tm));
  if (milliseconds && !out.empty() && out.back() == 'Z') {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    out.insert(out.size() - 1, fmt::format("{:03}", ms));
  }
  return out;
}

}  // namespace nanscope
