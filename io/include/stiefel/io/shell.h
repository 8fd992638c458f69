// Command lines a user can paste into a POSIX shell: the reproduce commands of certificates and
// records, the advice of error messages, the job scripts of a scheduler.
#pragma once

#include <string>

namespace stiefel::io {

// ARG quoted for a POSIX shell: as it is where it holds only characters no shell treats specially,
// else in single quotes with each ' written as '\''.
inline std::string shell_quote(const std::string& arg) {
  if (!arg.empty() &&
      arg.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=/.,:@%") ==
          std::string::npos)
    return arg;
  std::string q = "'";
  for (const char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace stiefel::io
