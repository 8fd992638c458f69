// The certificate as a JUnit XML report, the format CI dashboards read (Jenkins, GitLab, GitHub
// test reporters): one test case per claim and one per control, each failure with its message and
// the command that reproduces it. The report validates against certificates/junit.xsd.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace stiefel::certificates {

// Builds the report from a certificate as run_certificate writes it. A claim's test case fails when
// the claim did not meet its expected outcome (a refutation the paper's claim deserves is a pass);
// a control's fails when it survived. Throws nlohmann::json::exception for a malformed certificate.
std::string junit_xml(const nlohmann::json& certificate);

// TEXT as XML character data or an attribute value: the five special characters escaped, characters
// XML 1.0 cannot carry (control characters other than tab, line feed and carriage return, and bytes
// that are not UTF-8) replaced by U+FFFD. In an attribute (ATTRIBUTE true) line breaks and tabs are
// written as character references, which a parser keeps where it would turn a literal one into a space.
std::string xml_escape(const std::string& text, bool attribute = false);

}  // namespace stiefel::certificates
