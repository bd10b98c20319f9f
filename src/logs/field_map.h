#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "logs/step_line.h"

namespace re2 {
class RE2;
}

namespace bigmac::logs {

/// A custom step-line format from config `[logs.fields]`: field name -> regex with one capture.
/// Field names are the StepRecord fields: `global_step` (0-based) or `step` (1-based),
/// `loss`, `grad_norm`, `lr`, `samples_per_step`, `step_ms`, plus `loss_scale` and
/// `tokens_per_s` (kept in StepRecord::extra). RE2 keeps matching linear in the line length.
/// A line is a step record when the key field matches: `step`/`global_step` if mapped, else
/// `loss`, else the first field; the other fields are optional on that line.
class FieldMap {
 public:
  /// One compiled field.
  struct Field {
    std::string name;
    std::string pattern;
    std::shared_ptr<const re2::RE2> regex;
  };

  /// Compiles every field. An unknown field name, a malformed regex or one without exactly
  /// one capture group is a config Error naming the field (`logs.fields.<name>`).
  static Expected<FieldMap> compile(const std::map<std::string, std::string>& fields);

  const std::vector<Field>& fields() const { return fields_; }
  /// Index into fields() of the field that decides whether a line is a record.
  std::size_t key_field() const { return key_field_; }

  /// Reads a step line. Without a step field the step is `next_step` (the count so far).
  LineMatch read(std::string_view text, std::int64_t next_step, StepRecord& out,
                 std::string& error) const;

 private:
  std::vector<Field> fields_;
  std::size_t key_field_ = 0;
};

}  // namespace bigmac::logs
