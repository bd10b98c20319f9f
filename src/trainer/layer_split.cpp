#include "trainer/layer_split.h"

#include <fmt/format.h>

namespace bigmac::trainer {

std::vector<int> split_points(int num_layers, int pp) {
  std::vector<int> points;
  if (pp < 1 || num_layers < pp) return points;
  int base = num_layers / pp;
  int extra = num_layers % pp;
  int cut = 0;
  for (int stage = 0; stage + 1 < pp; ++stage) {
    cut += base + (stage < extra ? 1 : 0);
    points.push_back(cut);
  }
  return points;
}

Expected<void> check_split_points(int num_layers, int pp, std::span<const int> points) {
  auto fail = [](std::string message) {
    Error error = make_error(ErrorKind::kConfig, std::move(message));
    error.key = "model.split_points";
    return tl::unexpected(error);
  };
  if (pp < 1) return fail(fmt::format("pp_size is {}, expected at least 1", pp));
  if (num_layers < pp) {
    return fail(fmt::format("num_layers {} is smaller than pp_size {}", num_layers, pp));
  }
  if (points.size() != static_cast<std::size_t>(pp - 1)) {
    return fail(
        fmt::format("{} split points for pp_size {}, expected {}", points.size(), pp, pp - 1));
  }
  int previous = 0;
  for (int point : points) {
    if (point <= previous || point >= num_layers) {
      return fail(fmt::format("split point {} is not inside ({}, {}) or not increasing", point,
                              previous, num_layers));
    }
    previous = point;
  }
  return {};
}

LayerRange stage_layers(int num_layers, std::span<const int> points, int stage) {
  int stages = static_cast<int>(points.size()) + 1;
  if (stage < 0 || stage >= stages) return {};
  int first = stage == 0 ? 0 : points[static_cast<std::size_t>(stage - 1)];
  int end = stage + 1 == stages ? num_layers : points[static_cast<std::size_t>(stage)];
  if (end <= first) return {};
  return {first, end - 1};
}

}  // namespace bigmac::trainer
