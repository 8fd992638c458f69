// The certificate as JUnit XML (see junit.h).
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <stiefel/certificates/junit.h>
#include <string>

namespace stiefel::certificates {
namespace {

using nlohmann::json;

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence starting at TEXT[I] whose code point XML allows
// (https://www.w3.org/TR/xml/#charsets), or 0.
std::size_t utf8_char(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return (b >= 0x20 || b == '\t' || b == '\n' || b == '\r') ? 1 : 0;
  std::size_t n;
  std::uint32_t cp;
  if ((b & 0xE0) == 0xC0) {
    n = 2, cp = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3, cp = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4, cp = b & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n]) return 0;                 // overlong
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;  // surrogates
  if (cp == 0xFFFE || cp == 0xFFFF) return 0;  // not characters in XML
  if (cp > 0x10FFFF) return 0;
  return n;
}

std::string attr(const std::string& text) { return xml_escape(text, true); }

std::string seconds(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << (s > 0 ? s : 0.0);
  return out.str();
}

// A value as text; invalid UTF-8 inside a dumped value is replaced (U+FFFD), never an error.
std::string dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : dump(v); }

struct Suite {
  std::string body;
  int tests = 0, failures = 0, skipped = 0;
  double time = 0;
};

void add_case(Suite& s, const std::string& classname, const std::string& name, double time,
              const std::string& failure_type, const std::string& failure_message, const std::string& details) {
  ++s.tests;
  s.time += time;
  s.body += "    <testcase classname=\"" + attr(classname) + "\" name=\"" + attr(name) + "\" time=\"" + seconds(time) +
            "\">\n";
  if (!failure_type.empty()) {
    ++s.failures;
    s.body += "      <failure type=\"" + attr(failure_type) + "\" message=\"" + attr(failure_message) + "\">" +
              xml_escape(details) + "</failure>\n";
  } else {
    s.body += "      <system-out>" + xml_escape(details) + "</system-out>\n";
  }
  s.body += "    </testcase>\n";
}

// One test case per claim: it passes when the claim met its expected outcome.
Suite claim_cases(const json& certificate) {
  Suite s;
  for (const auto& c : certificate.at("claims")) {
    const std::string id = c.at("id"), expected = c.at("expected"), observed = c.at("observed");
    std::string details = text_of(c.at("source")) + ": " + text_of(c.at("statement")) + "\nexpected " + expected +
                          ", observed " + observed + "\n" + text_of(c.value("precision_behaviour", json(""))) + "\n";
    if (!c.at("counterexample").is_null()) details += "counterexample: " + dump(c.at("counterexample")) + "\n";
    details += "reproduce: " + text_of(c.at("reproduce")) + "\n";
    const bool met = c.at("meets_expectation").get<bool>();
    add_case(
        s, "stiefel.certify.claims", id, c.value("seconds", 0.0),
        met ? "" : "expected " + expected + ", observed " + observed,
        met ? ""
            : id + ": expected " + expected + ", observed " + observed + "; reproduce: " + text_of(c.at("reproduce")),
        details);
  }
  // The implementations of the update claims not run here (run.implementations_not_run): one
  // skipped test case each, with the reason, so that a dashboard shows them as not run.
  for (const auto& n : certificate.at("run").value("implementations_not_run", json::array())) {
    const std::string name = n.at("name"), reason = n.at("reason");
    ++s.tests;
    ++s.skipped;
    s.body += "    <testcase classname=\"stiefel.certify.implementations\" name=\"" + attr(name) +
              "\" time=\"0\">\n      <skipped message=\"" + attr(reason) + "\">" +
              xml_escape("the update claims of implementation '" + name + "' did not run: " + reason) +
              "</skipped>\n    </testcase>\n";
  }
  return s;
}

// One test case per control: it passes when the control was killed (the claim told the planted bug
// from the code), and fails when it survived.
Suite control_cases(const json& certificate) {
  Suite s;
  const json& run = certificate.at("run");
  for (const auto& c : certificate.at("claims")) {
    const std::string id = c.at("id");
    for (const auto& k : c.at("controls")) {
      const std::string control = k.at("id"), status = k.at("status");
      const std::string reproduce = "stiefel certify --seed " + text_of(run.at("seed")) + " --cases " +
                                    text_of(run.at("cases")) + " --claims '^" + id + "$' --swap-control '" + id + ":" +
                                    control + "' (the certificate must then fail)";
      std::string details = text_of(k.at("description")) + "\nstatus " + status + ": " +
                            text_of(k.at("cases_survived")) + " of " + text_of(k.at("cases")) +
                            " cases survived, minimum margin " + text_of(k.at("min_margin")) + " (required " +
                            text_of(k.at("required_margin")) + ")\n";
      if (!k.at("surviving_case").is_null()) details += "surviving case: " + dump(k.at("surviving_case")) + "\n";
      details += "reproduce: " + reproduce + "\n";
      // A property the rule does not claim (expected "observed") is measured, not required: its
      // controls inform and fail nothing.
      const bool killed = status == "killed" || c.at("expected") == "observed";
      add_case(s, "stiefel.certify.controls." + id, id + "/" + control, 0.0, killed ? "" : "control survived",
               killed ? ""
                      : "control " + control + " of " + id + " survived: the claim does not tell this planted bug " +
                            "from the code; reproduce: " + reproduce,
               details);
    }
  }
  return s;
}

std::string suite_xml(const std::string& name, const Suite& s, const json& certificate) {
  const json& run = certificate.at("run");
  std::string out = "  <testsuite name=\"" + attr(name) + "\" tests=\"" + std::to_string(s.tests) + "\" failures=\"" +
                    std::to_string(s.failures) + "\" errors=\"0\" skipped=\"" + std::to_string(s.skipped) +
                    "\" time=\"" + seconds(s.time) + "\" timestamp=\"" +
                    attr(text_of(run.value("started_utc", json("")))) + "\">\n";
  out += "    <properties>\n";
  const auto property = [&](const std::string& key, const json& value) {
    out += "      <property name=\"" + attr(key) + "\" value=\"" + attr(text_of(value)) + "\"/>\n";
  };
  property("seed", run.at("seed"));
  property("cases", run.at("cases"));
  property("precision", run.at("precision"));
  property("claims", run.at("claims"));
  property("reproduce", run.at("reproduce"));
  if (certificate.contains("generator")) {
    const json& g = certificate.at("generator");
    property("version", g.value("version", json("")));
    property("git_sha", g.value("git_sha", json("")));
  }
  return out + "    </properties>\n" + s.body + "  </testsuite>\n";
}

}  // namespace

std::string xml_escape(const std::string& text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_char(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    const char c = text[i];
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\r':
        out += "&#13;";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      default:
        out.append(text, i, n);
    }
    i += n;
  }
  return out;
}

std::string junit_xml(const json& certificate) {
  const Suite claims = claim_cases(certificate), controls = control_cases(certificate);
  const json& run = certificate.at("run");
  const double wall = run.value("wall_seconds", claims.time);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"stiefel certify\" tests=\"" + std::to_string(claims.tests + controls.tests) +
         "\" failures=\"" + std::to_string(claims.failures + controls.failures) + "\" errors=\"0\" skipped=\"" +
         std::to_string(claims.skipped + controls.skipped) + "\" time=\"" + seconds(wall) + "\">\n";
  out += suite_xml("claims", claims, certificate);
  out += suite_xml("controls", controls, certificate);
  return out + "</testsuites>\n";
}

}  // namespace stiefel::certificates
