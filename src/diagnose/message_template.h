#pragma once

#include <map>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

namespace bigmac::diagnose {

/// Values for a message template: capture names (`port`), capture numbers (`1`) or the values a
/// metric rule provides (`step`).
using TemplateValues = std::map<std::string, std::string, std::less<>>;

/// The placeholders `{name}` of a catalog text, in order; `{{` and `}}` are literal braces.
/// The error says what is malformed (an unclosed or empty brace).
tl::expected<std::vector<std::string>, std::string> template_placeholders(std::string_view text);

/// The text with every placeholder replaced; one without a value becomes `?`, so a catalog
/// entry never breaks a report.
std::string fill_template(std::string_view text, const TemplateValues& values);

}  // namespace bigmac::diagnose
