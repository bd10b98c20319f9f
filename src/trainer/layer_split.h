#pragma once

#include <span>
#include <vector>

#include "core/error.h"

namespace bigmac::trainer {

/// The layers one pipeline stage owns, inclusive layer_ids; {-1, -1} when it owns none.
struct LayerRange {
  int first = -1;
  int last = -1;

  int size() const { return first < 0 ? 0 : last - first + 1; }
  bool contains(int layer_id) const { return first >= 0 && layer_id >= first && layer_id <= last; }
  bool operator==(const LayerRange&) const = default;
};

/// The even split of `num_layers` over `pp` stages (the first stages take the remainder):
/// pp - 1 strictly increasing cut points inside (0, num_layers). Stage s owns
/// [cut[s-1], cut[s]) with cut[-1] = 0 and cut[pp-1] = num_layers.
std::vector<int> split_points(int num_layers, int pp);

/// Checks the rule of docs/architecture.md §2: pp - 1 cut points, strictly increasing, inside
/// (0, num_layers). The error names the offending value.
Expected<void> check_split_points(int num_layers, int pp, std::span<const int> points);

/// The range of `stage` for the cut points (assumed checked).
LayerRange stage_layers(int num_layers, std::span<const int> points, int stage);

}  // namespace bigmac::trainer
