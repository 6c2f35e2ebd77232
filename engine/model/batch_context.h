// A step's batch and draws as flat arrays (the batch slot's layout [s; s'; R; done; next_bar],
// actions [B, D], the IQN taus) and as the named arrays a dump stores. Once for both backends.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/backend.h"

namespace nanscope {

// Where each field starts in the batch slot's buffer [s; s'; R; done; next_bar] (elements):
// the one home of that layout for both backends and the tests.
struct BatchSlotOffsets {
  std::size_t obs, next_obs, returns, done, next_bar;
};
constexpr BatchSlotOffsets batch_slot_offsets(const Dims& d) {
  const auto B = static_cast<std::size_t>(d.B), F = static_cast<std::size_t>(d.F);
  return {0, B * F, 2 * B * F, 2 * B * F + B, 2 * B * F + 2 * B};
}

struct BatchArrays {
  std::vector<double> batch;                        // the batch slot's buffer
  std::vector<std::int32_t> actions;                // [B, D]
  std::vector<double> tau, tau_target, tau_greedy;  // empty without the IQN head
};

BatchContext to_batch_context(const Dims& d, const BatchArrays& a);
// Which named array (and which element of it) holds element `flat` of the batch slot's buffer.
struct BatchElement {
  const char* field;  // "obs", "next_obs", "returns", "done" or "next_bar"
  std::size_t index;
};
BatchElement locate_batch_element(const Dims& d, std::size_t flat);
// Every field a batch context may hold, in order (the IQN taus only with the IQN head), and
// whether it is stored as integers: what a dump reader looks for.
struct BatchFieldName {
  const char* name;
  bool integer;
};
const std::array<BatchFieldName, 9>& batch_field_names();
// Checks names and shapes against this network; throws DataError naming the field.
BatchArrays from_batch_context(const Dims& d, const BatchContext& c);

}  // namespace nanscope
