#include "report/attempt_records.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bigmac::report {
namespace {

void widen(double t, double& first, double& last) {
  if (t <= 0) return;
  if (first == 0 || t < first) first = t;
  if (t > last) last = t;
}

// JSON has no NaN or infinity, and a non-finite loss is exactly what a report must show: those
// are kept as the strings "nan", "inf" and "-inf".
nlohmann::json optional_json(const std::optional<double>& v) {
  if (!v) return nullptr;
  if (std::isnan(*v)) return "nan";
  if (std::isinf(*v)) return *v > 0 ? "inf" : "-inf";
  return *v;
}

std::optional<double> optional_number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  const nlohmann::json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (v == "inf") return std::numeric_limits<double>::infinity();
  if (v == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

nlohmann::json origin_json(const logs::RecordOrigin& at) {
  return {{"rank", at.rank}, {"line", at.line}, {"t", at.t}};
}

logs::RecordOrigin origin_from(const nlohmann::json& j) {
  logs::RecordOrigin at;
  if (!j.is_object()) return at;
  at.rank = j.value("rank", -1);
  at.line = j.value("line", std::int64_t{0});
  at.t = j.value("t", 0.0);
  return at;
}

}  // namespace

AttemptRecords attempt_records_of(std::span<const logs::RankLog> ranks) {
  AttemptRecords out;
  for (const logs::RankLog& rank : ranks) {
    if (rank.records > 0 || rank.context.seen() > 0) ++out.ranks_logged;
    if (out.steps.empty() && !rank.steps.empty()) {
      out.steps = rank.steps;
      out.field_sources = rank.field_sources;
    }
    out.micro_batches.insert(out.micro_batches.end(), rank.micro_batches.begin(),
                             rank.micro_batches.end());
    if (rank.run()) widen(rank.run()->at.t, out.first_t, out.last_t);
    for (const auto& s : rank.steps) widen(s.at.t, out.first_t, out.last_t);
    for (const auto& h : rank.heartbeats) widen(h.at.t, out.first_t, out.last_t);
    for (const auto& m : rank.micro_batches) widen(m.end, out.first_t, out.last_t);
    if (rank.done()) widen(rank.done()->at.t, out.first_t, out.last_t);
  }
  std::stable_sort(out.micro_batches.begin(), out.micro_batches.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  return out;
}

nlohmann::json to_json(const AttemptRecords& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const logs::StepRecord& s : r.steps) {
    nlohmann::json item = {
        {"at", origin_json(s.at)},       {"global_step", s.global_step},
        {"loss", optional_json(s.loss)}, {"grad_norm", optional_json(s.grad_norm)},
        {"lr", optional_json(s.lr)},     {"step_ms", optional_json(s.step_ms)}};
    item["samples_per_step"] =
        s.samples_per_step ? nlohmann::json(*s.samples_per_step) : nlohmann::json(nullptr);
    steps.push_back(std::move(item));
  }
  nlohmann::json mbs = nlohmann::json::array();
  for (const logs::MicroBatchRecord& m : r.micro_batches) {
    mbs.push_back({{"at", origin_json(m.at)},
                   {"global_step", m.global_step},
                   {"stage", m.stage},
                   {"mb", m.mb},
                   {"phase", std::string(1, m.phase)},
                   {"start", m.start},
                   {"end", m.end}});
  }
  return {{"ranks_logged", r.ranks_logged},
          {"first_t", r.first_t},
          {"last_t", r.last_t},
          {"steps", std::move(steps)},
          {"micro_batches", std::move(mbs)},
          {"field_sources", r.field_sources}};
}

AttemptRecords attempt_records_from_json(const nlohmann::json& j) {
  AttemptRecords r;
  if (!j.is_object()) return r;
  r.ranks_logged = j.value("ranks_logged", 0);
  r.first_t = j.value("first_t", 0.0);
  r.last_t = j.value("last_t", 0.0);
  if (const auto sources = j.find("field_sources"); sources != j.end() && sources->is_object()) {
    for (const auto& [field, source] : sources->items()) {
      if (source.is_string()) r.field_sources[field] = source.get<std::string>();
    }
  }
  for (const auto& s : j.value("steps", nlohmann::json::array())) {
    if (!s.is_object()) continue;
    logs::StepRecord step;
    step.at = origin_from(s.value("at", nlohmann::json()));
    step.global_step = s.value("global_step", std::int64_t{0});
    step.loss = optional_number(s, "loss");
    step.grad_norm = optional_number(s, "grad_norm");
    step.lr = optional_number(s, "lr");
    step.step_ms = optional_number(s, "step_ms");
    if (s.contains("samples_per_step") && s["samples_per_step"].is_number_integer()) {
      step.samples_per_step = s["samples_per_step"].get<std::int64_t>();
    }
    r.steps.push_back(std::move(step));
  }
  for (const auto& m : j.value("micro_batches", nlohmann::json::array())) {
    if (!m.is_object()) continue;
    logs::MicroBatchRecord mb;
    mb.at = origin_from(m.value("at", nlohmann::json()));
    mb.global_step = m.value("global_step", std::int64_t{0});
    mb.stage = m.value("stage", 0);
    mb.mb = m.value("mb", 0);
    const std::string phase = m.value("phase", "F");
    mb.phase = phase.empty() ? 'F' : phase.front();
    mb.start = m.value("start", 0.0);
    mb.end = m.value("end", 0.0);
    r.micro_batches.push_back(mb);
  }
  return r;
}

}  // namespace bigmac::report
