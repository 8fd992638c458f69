// The certificate's JUnit report: XML escaping over every byte, and a report built from a
// certificate whose texts are hostile (markup, quotes, control characters, bytes that are not
// UTF-8). junit_reports.sh validates reports against certificates/junit.xsd with xmllint.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stiefel/certificates/junit.h>
#include <string>

namespace stiefel::certificates {
namespace {

using nlohmann::json;

const std::string kFffd = "\xEF\xBF\xBD";

// Every byte alone: markup and quotes become entities, the three whitespace controls stay (as
// references in attributes), other controls and every byte that does not begin a complete UTF-8
// character become U+FFFD.
TEST(Junit, EveryByteIsEscapedOrReplaced) {
  for (int b = 0; b < 256; ++b) {
    const std::string in(1, char(b));
    const std::string text = xml_escape(in), attribute = xml_escape(in, true);
    if (b == '&') {
      EXPECT_EQ(text, "&amp;");
    } else if (b == '<') {
      EXPECT_EQ(text, "&lt;");
    } else if (b == '>') {
      EXPECT_EQ(text, "&gt;");
    } else if (b == '"') {
      EXPECT_EQ(attribute, "&quot;");
    } else if (b == '\'') {
      EXPECT_EQ(attribute, "&apos;");
    } else if (b == '\n') {
      EXPECT_EQ(text, "\n");
      EXPECT_EQ(attribute, "&#10;");
    } else if (b == '\t') {
      EXPECT_EQ(text, "\t");
      EXPECT_EQ(attribute, "&#9;");
    } else if (b == '\r') {
      EXPECT_EQ(text, "&#13;");
    } else if (b < 0x20 || b >= 0x80) {
      EXPECT_EQ(text, kFffd) << b;
      EXPECT_EQ(attribute, kFffd) << b;
    } else {
      EXPECT_EQ(text, in) << b;
    }
  }
}

TEST(Junit, Utf8IsKeptAndMalformedSequencesAreReplaced) {
  EXPECT_EQ(xml_escape("§5.3 η_R √H ≈ 𝔼"), "§5.3 η_R √H ≈ 𝔼");
  EXPECT_EQ(xml_escape("\xC0\xAF"), kFffd + kFffd);                          // overlong '/'
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // a surrogate
  EXPECT_EQ(xml_escape("\xEF\xBF\xBE"), kFffd + kFffd + kFffd);              // U+FFFE
  EXPECT_EQ(xml_escape("a\xE2\x89"), "a" + kFffd + kFffd);                   // cut short at the end
  EXPECT_EQ(xml_escape("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
}

json hostile_certificate(bool claim_met, const std::string& control_status) {
  const std::string evil = "</failure><x a=\"1\">&amp; ' \x01\x1b]0; \xFF ]]> <!-- --";
  json claim = {{"id", "claim-" + evil},
                {"source", "§" + evil},
                {"statement", evil},
                {"expected", "certified"},
                {"observed", claim_met ? "certified" : "refuted"},
                {"meets_expectation", claim_met},
                {"precision_behaviour", evil},
                {"counterexample", claim_met ? json(nullptr) : json{{"case", evil}}},
                {"reproduce", "stiefel certify --claims '^" + evil + "$'"},
                {"seconds", 0.25},
                {"controls",
                 {{{"id", "control-" + evil},
                   {"description", evil},
                   {"status", control_status},
                   {"cases", 4},
                   {"cases_survived", control_status == "killed" ? 0 : 4},
                   {"min_margin", 0.5},
                   {"required_margin", 10.0},
                   {"surviving_case", control_status == "killed" ? json(nullptr) : json{{"x", evil}}}}}}};
  return {{"claims", {claim}},
          {"run",
           {{"seed", 7},
            {"cases", 4},
            {"precision", "both"},
            {"claims", evil},
            {"reproduce", "stiefel certify " + evil},
            {"started_utc", "2026-12-02T00:00:00Z"},
            {"wall_seconds", 1.5}}},
          {"generator", {{"version", "0.1.0"}, {"git_sha", evil}}}};
}

// No text of the certificate leaves its attribute or element: the only markup is the report's own.
TEST(Junit, HostileTextsStayInsideTheirAttributesAndElements) {
  for (const bool met : {true, false})
    for (const std::string status : {"killed", "survived"}) {
      const std::string xml = junit_xml(hostile_certificate(met, status));
      EXPECT_EQ(xml.find("</failure><x"), std::string::npos);
      EXPECT_EQ(xml.find("<x a="), std::string::npos);
      EXPECT_EQ(xml.find("<!--"), std::string::npos);
      EXPECT_EQ(xml.find('\x01'), std::string::npos);
      EXPECT_EQ(xml.find('\x1b'), std::string::npos);
      EXPECT_EQ(xml.find('\xFF'), std::string::npos);
      std::size_t elements = 0;
      for (std::size_t i = xml.find('<'); i != std::string::npos; i = xml.find('<', i + 1)) ++elements;
      const int failures = int(!met) + int(status == "survived");
      // declaration, testsuites (2), 2 suites (4), 2 properties blocks (4) with 7 properties
      // each (14), 2 test cases (4), each with a failure or a system-out (4)
      EXPECT_EQ(elements, 1 + 2 + 4 + 4 + 14 + 4 + 4u) << xml;
      EXPECT_NE(xml.find("failures=\"" + std::to_string(failures) + "\" errors=\"0\""), std::string::npos) << xml;
    }
}

TEST(Junit, AMalformedCertificateIsAJsonError) {
  EXPECT_THROW(junit_xml(json::object()), json::exception);
  auto c = hostile_certificate(true, "killed");
  c["claims"][0].erase("meets_expectation");
  EXPECT_THROW(junit_xml(c), json::exception);
  c = hostile_certificate(true, "killed");
  c["claims"][0]["controls"][0].erase("status");
  EXPECT_THROW(junit_xml(c), json::exception);
}

}  // namespace
}  // namespace stiefel::certificates
