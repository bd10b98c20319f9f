#include "trainer/collective_ledger.h"

#include <fmt/format.h>

namespace bigmac::trainer {

void CollectiveLedger::record(std::string_view op, const std::string& group,
                              const std::vector<std::int64_t>& shape, std::string_view dtype,
                              const std::source_location& where) {
  std::int64_t& next = seq_[group];
  LogEvent event = log_.event(EventKind::kCollective);
  event.field(FieldKey::kGroup, group)
      .field(FieldKey::kSeq, next)
      .field(FieldKey::kOp, op)
      .field(FieldKey::kSite, site_of(where))
      .field(FieldKey::kFn, function_of(where))
      .field(FieldKey::kGlobalStep, step_);
  if (!dtype.empty()) event.field(FieldKey::kShape, shape).field(FieldKey::kDtype, dtype);
  ++next;
  log_.write(event);
}

std::string channel_key(int sender, int receiver) {
  return fmt::format("{}->{}", sender, receiver);
}

std::string site_of(const std::source_location& where) {
  std::string_view file = where.file_name();
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return fmt::format("{}:{}", file, where.line());
}

std::string function_of(const std::source_location& where) {
  // GCC and Clang give the whole signature: "void ns::Class::name(int) const".
  std::string_view name = where.function_name();
  if (auto paren = name.find('('); paren != std::string_view::npos) name = name.substr(0, paren);
  if (auto scope = name.rfind("::"); scope != std::string_view::npos) name.remove_prefix(scope + 2);
  if (auto space = name.rfind(' '); space != std::string_view::npos) name.remove_prefix(space + 1);
  return std::string(name);
}

}  // namespace bigmac::trainer
