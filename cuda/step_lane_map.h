// Which side lane (stream_lanes.h) each branch of the captured step runs on, forward and backward
// in one place: the backward starts before every forward head has finished, so each head's
// backward runs on the lane of its forward, where the lane's own order holds what it reads.
#pragma once

namespace nanscope::cuda::step_lane {

// The forward: the three networks side by side, the IQN head's three passes each beside its
// network, the aux and ensemble heads beside the C51 losses.
constexpr int kMain = 0, kNext = 1, kTarget = 2, kIqn = 3, kAux = 4, kEns = 5, kGreedyEmbedding = 6,
              kTargetEmbedding = 7;

// The backward. Its chain on the main lane starts from the C51 heads. The IQN head's backward
// follows its loss (made on the target lane), its output layer's gradients on the online pass's
// lane; the aux and ensemble heads' on their forward lanes; the CQL gradient's lane is where the
// captured forward made it, after the MSE and CQL terms (beside the C51 projection). The value and
// advantage terms take lanes whose forward work ends early (the next state's network and the target
// pass's embedding).
constexpr int kBwAdv = kNext, kBwIqn = kTarget, kBwIqnGrad = kIqn, kBwAux = kAux, kBwEns = kEns,
              kBwCql = kGreedyEmbedding, kBwValue = kTargetEmbedding;

// Adam's counter without the guard, beside the backward's last launches: the value head's lane,
// idle after its gradients (the advantage head's lane ends with the first layer's bias gradient).
constexpr int kUpdateCounter = kBwValue;

}  // namespace nanscope::cuda::step_lane
