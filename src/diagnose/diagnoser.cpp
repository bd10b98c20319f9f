#include "diagnose/diagnoser.h"

#include "diagnose/ranking.h"
#include "diagnose/text_scan.h"

namespace bigmac::diagnose {

Diagnoser::Diagnoser() = default;
Diagnoser::Diagnoser(Diagnoser&&) noexcept = default;
Diagnoser& Diagnoser::operator=(Diagnoser&&) noexcept = default;
Diagnoser::~Diagnoser() = default;

Expected<Diagnoser> Diagnoser::create(Catalog catalog) {
  Diagnoser d;
  d.catalog_ = std::make_unique<Catalog>(std::move(catalog));
  auto matcher = TextMatcher::build(*d.catalog_);
  if (!matcher) return tl::unexpected(matcher.error());
  d.matcher_ = std::make_unique<TextMatcher>(std::move(*matcher));
  return d;
}

TextScan Diagnoser::start_scan() const { return TextScan(*matcher_); }

std::vector<Diagnosis> Diagnoser::diagnose(const MetricInput& input) const {
  TextScan scan(*matcher_);
  for (const logs::RankLog& log : input.logs) {
    scan.begin_file(log.label());
    for (const logs::TextLine& line : log.context.lines()) scan.add_line(line);
  }
  return finish(scan, input);
}

std::vector<Diagnosis> Diagnoser::finish(TextScan& scan, const MetricInput& input) const {
  std::vector<Diagnosis> all = scan.finish();
  std::vector<Diagnosis> metrics = apply_metric_rules(*catalog_, input);
  all.insert(all.end(), std::make_move_iterator(metrics.begin()),
             std::make_move_iterator(metrics.end()));
  rank_diagnoses(all);
  return all;
}

}  // namespace bigmac::diagnose
